"""mantissa: Huawei CANN training operators on CPUs, the same bits on every SIMD target and
thread count.

Every operator of the C++ API works on numpy arrays and PyTorch CPU tensors in place, without
copying (see docs/python.md). A failed call raises mantissa.Error (a ValueError) with .code, the
CANN status code; nothing is written then. ``mantissa.torch`` (the drop-in optimizers and
GradScaler) is loaded on first use, and only where torch is installed.
"""

from ._mantissa import *  # noqa: F401,F403
from ._mantissa import Error, __doc__ as _native_doc  # noqa: F401

__version__ = version().split()[-1]  # noqa: F405


def __getattr__(name):
    # `mantissa.torch` without importing torch at `import mantissa` (it takes a second).
    if name == "torch":
        import importlib

        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'mantissa' has no attribute {name!r}")
