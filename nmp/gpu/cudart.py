"""The few CUDA runtime calls that CuPy does not wrap, through ctypes: the device's attributes,
the persisting-L2 limit and its reset, and a stream's access-policy window (the pinning
variants of :mod:`nmp.gpu.kernels_real`). Loaded on use: nothing here runs without a GPU."""

from __future__ import annotations

import ctypes

from nmp.errors import NmpError


class Cudart:
    """The few CUDA runtime calls CuPy does not wrap (access-policy window, persisting L2)."""

    LIMIT_PERSISTING_L2 = 0x06  # cudaLimitPersistingL2CacheSize
    STREAM_ATTR_ACCESS_POLICY_WINDOW = 1  # cudaStreamAttributeAccessPolicyWindow
    ATTR_MAX_PERSISTING_L2 = 108  # cudaDevAttrMaxPersistingL2CacheSize (39,321,600 B on H200)
    ATTR_MAX_WINDOW = 109  # cudaDevAttrMaxAccessPolicyWindowSize (134,217,728 B on H200)
    ACCESS_NORMAL, ACCESS_STREAMING, ACCESS_PERSISTING = 0, 1, 2

    def __init__(self) -> None:
        import ctypes.util

        names = [ctypes.util.find_library("cudart")] + [
            f"libcudart.so.{v}" for v in ("13", "12", "11.0")
        ]
        for name in filter(None, names):
            try:
                self.lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        else:
            raise NmpError("libcudart not found: the pinning variants need the CUDA runtime")

    def _ok(self, rc: int, what: str) -> None:
        if rc != 0:
            raise NmpError(f"{what} failed with cudaError {rc}")

    def attribute(self, attr: int, device: int = 0) -> int:
        """cudaDeviceGetAttribute(&value, attr, device)."""
        value = ctypes.c_int(0)
        self._ok(
            self.lib.cudaDeviceGetAttribute(
                ctypes.byref(value), ctypes.c_int(attr), ctypes.c_int(device)
            ),
            f"cudaDeviceGetAttribute({attr})",
        )
        return int(value.value)

    def set_persisting_limit(self, nbytes: int) -> None:
        self._ok(
            self.lib.cudaDeviceSetLimit(
                ctypes.c_int(self.LIMIT_PERSISTING_L2), ctypes.c_size_t(nbytes)
            ),
            "cudaDeviceSetLimit(persisting L2)",
        )

    def reset_persisting(self) -> None:
        self._ok(self.lib.cudaCtxResetPersistingL2Cache(), "cudaCtxResetPersistingL2Cache")

    def set_window(self, stream_ptr: int, base_ptr: int, nbytes: int, hit_ratio: float) -> None:
        """cudaStreamSetAttribute(stream, AccessPolicyWindow, {base, bytes, hitRatio,
        persisting, normal}); nbytes 0 removes the window. missProp normal (CUDA allows normal
        or streaming): the model's lines outside the hitRatio share are normal lines; at
        hitRatio 1 (the hot set within the set-aside, as on the H200) no line takes it."""

        class Window(ctypes.Structure):
            _fields_ = [
                ("base_ptr", ctypes.c_void_p),
                ("num_bytes", ctypes.c_size_t),
                ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int),
                ("missProp", ctypes.c_int),
            ]

        class Value(ctypes.Union):  # cudaStreamAttrValue / cudaLaunchAttributeValue: 64 bytes
            _fields_ = [("window", Window), ("pad", ctypes.c_char * 64)]

        value = Value()
        value.window = Window(
            base_ptr, nbytes, hit_ratio, self.ACCESS_PERSISTING, self.ACCESS_NORMAL
        )
        self._ok(
            self.lib.cudaStreamSetAttribute(
                ctypes.c_void_p(stream_ptr),
                ctypes.c_int(self.STREAM_ATTR_ACCESS_POLICY_WINDOW),
                ctypes.byref(value),
            ),
            "cudaStreamSetAttribute(access-policy window)",
        )
