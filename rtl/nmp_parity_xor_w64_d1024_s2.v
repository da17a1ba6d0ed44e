// Generated automatically via PyRTL
// As one initial test of synthesis, map to FPGA with:
//   yosys -p "synth_xilinx -top nmp_parity_xor_w64_d1024_s2" thisfile.v

module nmp_parity_xor_w64_d1024_s2(clk, rst, dbg_addr, in_addr, in_delta, in_valid, dbg_data, in_ready, wr_addr, wr_data, wr_en);
    input clk;
    input rst;
    input[9:0] dbg_addr;
    input[9:0] in_addr;
    input[63:0] in_delta;
    input in_valid;
    output[63:0] dbg_data;
    output in_ready;
    output[9:0] wr_addr;
    output[63:0] wr_data;
    output wr_en;

    // Memories
    reg[63:0] parity_mem[1023:0];  // MemBlock

    // Registers
    reg[9:0] clear_addr;
    reg clearing;
    reg[9:0] h1_addr;
    reg[63:0] h1_data;
    reg h1_en;
    reg[63:0] rd_q;
    reg[9:0] s1_addr;
    reg[63:0] s1_delta;
    reg s1_valid;
    reg[9:0] s2_addr;
    reg[63:0] s2_delta;
    reg s2_valid;

    // Temporaries
    wire core_ready;
    wire tmp0;
    wire[10:0] tmp5;
    wire[10:0] tmp7;
    wire tmp9;
    wire[63:0] tmp18;
    wire[63:0] tmp19;
    wire[9:0] wr_addr_int;
    wire[63:0] wr_data_int;
    wire wr_en_int;

    // Combinational logic
    assign core_ready = tmp9;
    assign dbg_data = tmp19;
    assign in_ready = core_ready;
    assign tmp0 = (clear_addr == 10'd1023);
    assign tmp5 = (clear_addr + 10'd1);
    assign tmp7 = ((clearing & ~(tmp0)) ? tmp5 : {1'd0, clear_addr});
    assign tmp9 = ~(clearing);
    assign wr_addr = wr_addr_int;
    assign wr_addr_int = (clearing ? clear_addr : s2_addr);
    assign wr_data = wr_data_int;
    assign wr_data_int = (clearing ? 64'd0 : (((h1_en & (h1_addr == s2_addr)) ? h1_data : rd_q) ^ s2_delta));
    assign wr_en = wr_en_int;
    assign wr_en_int = (s2_valid | clearing);

    // Register logic
    always @(posedge clk) begin
        if (rst) begin
            clear_addr <= 10'd0;
            clearing <= 1'd1;
            h1_addr <= 10'd0;
            h1_data <= 64'd0;
            h1_en <= 1'd0;
            rd_q <= 64'd0;
            s1_addr <= 10'd0;
            s1_delta <= 64'd0;
            s1_valid <= 1'd0;
            s2_addr <= 10'd0;
            s2_delta <= 64'd0;
            s2_valid <= 1'd0;
        end else begin
            clear_addr <= (tmp7[9:0]);
            clearing <= (clearing & ~(tmp0));
            h1_addr <= wr_addr_int;
            h1_data <= wr_data_int;
            h1_en <= wr_en_int;
            rd_q <= tmp18;
            s1_addr <= in_addr;
            s1_delta <= in_delta;
            s1_valid <= (in_valid & tmp9);
            s2_addr <= s1_addr;
            s2_delta <= s1_delta;
            s2_valid <= s1_valid;
        end
    end

    // MemBlock parity_mem logic
    always @(posedge clk) begin
        if (wr_en_int) begin
            parity_mem[wr_addr_int] <= wr_data_int;
        end
    end
    assign tmp18 = parity_mem[s1_addr];
    assign tmp19 = parity_mem[dbg_addr];
endmodule
