"""How ``benchmarks/peers.py`` drives each peer, as the reference data was recorded
(``data/reference/dram/README.md``): a Python script for Ramulator 2 (its bindings, the case's
configuration) and an in-order trace injector for DRAMsim3 (its library API). Each prints one
JSON line with the cycles and the wall and CPU time of its simulation loop, and the time that
loop waited for a CPU (Linux's ``run_delay`` of ``/proc/self/schedstat``; 0 where there is
none): ``wait_s``."""

RAMULATOR_SCRIPT = r"""
import json, sys, time
import ramulator as R


def queue_wait():
    try:
        with open("/proc/self/schedstat") as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0

trace, config = sys.argv[1], json.loads(sys.argv[2])
common = config["controller_common"]


def controller():
    dram_class = getattr(R.dram, config["standard"])
    org = {"rank": config["ranks"]} if "ranks" in config else {}
    dram = dram_class(
        org_preset=config["org_preset"], timing_preset=config["timing_preset"], **org
    )
    return getattr(R.controller, config["controller"])(
        dram=dram,
        scheduler=R.scheduler.FRFCFS(),
        refresh_manager=R.refresh_manager.AllBank(scatter_interval=0),
        row_policy=R.row_policy.Open(),
        addr_mapper=R.addr_mapper.RoBaRaCoCh(),
        read_buffer_size=common["read_buffer_size"],
        write_buffer_size=common["write_buffer_size"],
        priority_buffer_size=common["priority_buffer_size"],
        wr_low_watermark=common["wr_low_watermark"],
        wr_high_watermark=common["wr_high_watermark"],
    )


memory = R.memory_system.GenericDRAM(
    clock_ratio=config["memory_clock_ratio"],
    controllers=[controller() for _ in range(config["channels"])],
    channel_mapper=R.channel_mapper.CacheLineInterleave(
        interleave_bits=config["channel_interleave_bits"]
    ),
)
frontend = R.frontend.LoadStoreTrace(clock_ratio=config["frontend_clock_ratio"], path=trace)
sim = R.Simulation(frontend, memory)
t0, c0, w0 = time.perf_counter(), time.process_time(), queue_wait()
sim.run()
run_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
wait_s = queue_wait() - w0
ctrl = sim.stats["memory_system"]["controller"]
cycles = (ctrl if isinstance(ctrl, dict) else ctrl[0])["cycles"]
print(json.dumps({"cycles": cycles, "run_s": run_s, "cpu_s": cpu_s, "wait_s": wait_s}))
"""

DRAMSIM3_INJECTOR = r"""
// In-order trace injector for DRAMsim3 (data/reference/dram/README.md section 7): each memory
// cycle, offer up to K lines in trace order, stopping at the first refused, then tick once.
// Prints the ticks done when the last line was accepted and the loop's wall and CPU time, and
// the time it waited for a CPU (run_delay of /proc/self/schedstat; 0 where there is none).
#include <chrono>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "dramsim3.h"

static double queue_wait() {
    unsigned long long on_cpu = 0, wait = 0;
    FILE *f = std::fopen("/proc/self/schedstat", "r");
    if (!f) return 0.0;
    const int got = std::fscanf(f, "%llu %llu", &on_cpu, &wait);
    std::fclose(f);
    return got == 2 ? wait / 1e9 : 0.0;
}

int main(int argc, char **argv) {
    if (argc != 5) return 2;
    const int K = std::stoi(argv[4]);
    std::vector<uint64_t> addr;
    std::vector<char> write;
    std::ifstream in(argv[3]);
    std::string op, hex;
    while (in >> op >> hex) {
        addr.push_back(std::stoull(hex, nullptr, 16));
        write.push_back(op == "ST");
    }
    auto *mem = dramsim3::GetMemorySystem(argv[1], argv[2], [](uint64_t) {}, [](uint64_t) {});
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    const double w0 = queue_wait();
    size_t i = 0;
    uint64_t clk = 0, idle = 0;
    while (i < addr.size()) {
        int offered = 0;
        for (int k = 0; k < K && i < addr.size(); k++, offered++) {
            if (!mem->WillAcceptTransaction(addr[i], write[i])) break;
            mem->AddTransaction(addr[i], write[i]);
            i++;
        }
        if (i == addr.size()) break;
        idle = offered ? 0 : idle + 1;
        if (idle > 10000000) {
            std::printf("{\"deadlock\": true, \"cycles_accept\": %llu}\n", (unsigned long long)clk);
            return 0;
        }
        mem->ClockTick();
        clk++;
    }
    const double run_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu_s = double(std::clock() - c0) / CLOCKS_PER_SEC;
    const double wait_s = queue_wait() - w0;
    std::printf("{\"cycles_accept\": %llu, \"run_s\": %.9f, \"cpu_s\": %.9f, \"wait_s\": %.9f}\n",
                (unsigned long long)clk, run_s, cpu_s, wait_s);
    return 0;
}
"""
