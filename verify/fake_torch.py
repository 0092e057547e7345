"""A stand-in for the few torch calls bench/peers_gpu.py makes, so its GPU parts run where there is
neither torch nor a GPU (test_gpu_report_script.c): every tensor is a shape, every kernel returns
at once, every timed sample reads 1 ms. It proves the script's plumbing (its parts, their rows, the
report, the failures), not a figure.

  python3 verify/fake_torch.py SCRIPT [ARGS...]      runs SCRIPT as __main__ with this torch
FAKE_TORCH_FAIL=cudnn makes the cuDNN attention backend raise, as a torch without it would.
"""
import contextlib
import enum
import os
import runpy
import sys
import time
import types


class Tensor:
    def __init__(self, *shape):
        self.shape = shape

    def size(self, i):
        return self.shape[i]

    @property
    def T(self):
        return Tensor(*reversed(self.shape))

    def bfloat16(self):
        return self

    def norm(self):
        return Tensor()

    def __matmul__(self, other):
        return Tensor(self.shape[0], other.shape[-1])

    def _same(self, other):
        return Tensor(*self.shape)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __itruediv__ = _same
    __ge__ = __gt__ = __le__ = __lt__ = __eq__ = __and__ = __floordiv__ = _same
    __hash__ = object.__hash__

    def __getitem__(self, index):
        return Tensor(1)


class Event:
    def __init__(self, enable_timing=False):
        pass

    def record(self):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return 1.0


def synchronize():
    time.sleep(0.001)  # a call "takes" 1 ms, so the samples stay short


def module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


class SDPBackend(enum.Enum):
    FLASH_ATTENTION = 1
    CUDNN_ATTENTION = 2


@contextlib.contextmanager
def sdpa_kernel(backend):
    if backend == SDPBackend.CUDNN_ATTENTION and os.environ.get("FAKE_TORCH_FAIL") == "cudnn":
        raise RuntimeError("No available kernel (stand-in)")
    yield


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None, BLOCK_SIZE=128, _compile=False):
    mask_mod(0, 0, Tensor(Q_LEN), Tensor(KV_LEN))
    return object()


def install():
    torch = module("torch", __version__="0.0-stand-in", bfloat16="bf16", float32="f32", int32="i32",
                   randn=lambda *shape, **kw: Tensor(*shape), ones=lambda *shape, **kw: Tensor(*shape),
                   tensor=lambda data, **kw: Tensor(len(data)), mm=lambda a, b, out_dtype=None: a @ b,
                   addmm=lambda c, a, b: (a @ b)._same(c),
                   compile=lambda f: f)
    torch.version = types.SimpleNamespace(cuda="0.0")
    torch.backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 0))
    torch.cuda = types.SimpleNamespace(is_available=lambda: True, get_device_name=lambda i: "stand-in GPU",
                                       synchronize=synchronize, Event=Event)
    torch.autograd = types.SimpleNamespace(grad=lambda out, inputs, grad: tuple(Tensor(*x.shape) for x in inputs))
    torch.nn = module("torch.nn")
    torch.nn.functional = module("torch.nn.functional",
                                 scaled_dot_product_attention=lambda q, k, v, is_causal=False: q)
    torch.nn.attention = module("torch.nn.attention", SDPBackend=SDPBackend, sdpa_kernel=sdpa_kernel)
    torch.nn.attention.flex_attention = module("torch.nn.attention.flex_attention",
                                               flex_attention=lambda q, k, v, block_mask=None: q,
                                               create_block_mask=create_block_mask)


if __name__ == "__main__":
    install()
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
    runpy.run_path(sys.argv[0], run_name="__main__")
