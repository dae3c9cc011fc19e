"""The wrappers that see CUDA touches (and, with --pretend-cuda, send them to the CPU).

Light by design: module attributes replaced by recording wrappers, ``__init__`` of torch classes
wrapped in place (class identity, ``isinstance`` and subclasses keep working), one
``TorchFunctionMode`` for placements. Calls torch makes by itself are not the program's and pass
through untouched (torch asks ``torch.cuda.is_available()`` in many places).
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from typing import Any
from collections.abc import Callable

from . import hosts
from . import pretend as emulation
from .record import Recorder

#: environment variables only CUDA / NCCL / cuDNN read (prefixes end with "_")
CUDA_ENV = ("CUDA_", "NCCL_", "TORCH_NCCL_", "CUDNN_", "CUBLAS_", "CUBLASLT_", "NVIDIA_",
            "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING", "TORCH_CUDA_ARCH_LIST",
            "NVTE_", "TORCHINDUCTOR_CUDA")
#: torch.compile modes that capture CUDA graphs
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")


def is_cuda(device: Any) -> bool:
    if isinstance(device, str):
        return device == "cuda" or device.startswith("cuda:")
    return getattr(device, "type", None) == "cuda" and type(device).__name__ == "device"


def device_type(device: Any) -> str | None:
    """The type of a device given as a string or a ``torch.device`` (None for anything else)."""
    if isinstance(device, str):
        return device.split(":", 1)[0]
    return getattr(device, "type", None) if type(device).__name__ == "device" else None


def install(torch: Any, recorder: Recorder, pretend: bool, host: str | None = None) -> None:
    """Record the program's CUDA touches; ``pretend``: send them to the CPU; ``host``: simulate
    that host too (see hosts.py; ``cuda`` is ``pretend``)."""
    recorder.add_library(os.path.dirname(torch.__file__))
    typing_extensions = sys.modules.get("typing_extensions")  # torch's @deprecated wrappers
    if typing_extensions is not None and getattr(typing_extensions, "__file__", None):
        recorder.add_library(typing_extensions.__file__)  # type: ignore[arg-type]
    accelerator = "cuda" if pretend else host if host in ("neuron", "mps") else None
    calls = hosts.simulate(torch, host, lambda name, real, fake: _recording(
        recorder, "accelerator", name, fake, f"answers as the {host} host", real, touch=False)) if host else []
    _install_cuda_namespace(torch, recorder, pretend)
    _install_placements(torch, recorder, pretend, accelerator if accelerator != "cuda" else None)
    _install_amp(torch, recorder, pretend)
    _install_compile(torch, recorder, pretend)
    _install_distributed(torch, recorder, pretend)
    if accelerator:
        _install_accelerator(torch, recorder, accelerator, calls)


def _fail(recorder: Recorder, what: str, why: str) -> None:
    where = recorder.site("unsupported", what, redirect="cannot be emulated: raised")
    raise emulation.PretendCudaError(
        f"neuronize audit --pretend-cuda: `{what}` at {where or 'an unknown line'} cannot run "
        f"without a GPU ({why}). The run stops here; the sites recorded so far are kept.")


# -- torch.cuda.* --------------------------------------------------------------------------------
def _install_cuda_namespace(torch: Any, recorder: Recorder, pretend: bool) -> None:
    cuda = torch.cuda
    answers = emulation.answers(torch)
    for name, value in list(vars(cuda).items()):
        if name.startswith("_") or not callable(value) or inspect.ismodule(value):
            continue
        if not getattr(value, "__module__", "").startswith("torch.cuda"):
            continue
        if isinstance(value, type) and issubclass(value, BaseException):
            continue
        what = f"torch.cuda.{name}"
        if isinstance(value, type) and not pretend:
            _record_construction(value, recorder, what)
            continue
        impl = value
        redirect = ""
        if pretend:
            impl, redirect = _pretend_impl(torch, recorder, name, value, answers)
        setattr(cuda, name, _recording(recorder, "cuda-api", what, impl, redirect, value, touch=name not in _QUEUED))
    nvtx = getattr(cuda, "nvtx", None)
    for name in emulation.NVTX if nvtx is not None else ():
        if hasattr(nvtx, name):
            original = getattr(nvtx, name)
            impl = emulation.NVTX[name] if pretend else original
            setattr(nvtx, name, _recording(recorder, "cuda-api", f"torch.cuda.nvtx.{name}", impl,
                                           "does nothing" if pretend else "", original))


#: seeding calls torch queues until CUDA initialises: where CUDA never does, they touch nothing (the
#: static rules leave one alone where ``torch.manual_seed`` beside it seeds every device)
_QUEUED = frozenset({"manual_seed", "manual_seed_all"})


def _pretend_impl(torch: Any, recorder: Recorder, name: str, original: Callable[..., Any],
                  answers: dict[str, Callable[..., Any]]) -> tuple[Callable[..., Any], str]:
    """What a ``torch.cuda`` name does under --pretend-cuda, and the redirection as words."""
    if name in answers:
        return answers[name], "answered on the CPU"
    if name in emulation.CLASSES:
        return emulation.CLASSES[name], "a stand-in that does nothing"
    if name.endswith("Tensor") and hasattr(torch, name):
        return getattr(torch, name), f"torch.{name} (CPU)"
    if name in emulation.CANNOT_EMULATE:
        why = emulation.CANNOT_EMULATE[name]

        def refuse(*args: Any, **kwargs: Any) -> Any:
            _fail(recorder, f"torch.cuda.{name}", why)

        return refuse, ""

    def attempt(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        except Exception as exc:  # the CPU build refuses: say where, not just what
            _fail(recorder, f"torch.cuda.{name}", f"{type(exc).__name__}: {exc}")

    return attempt, "called as is (no stand-in)"


def _recording(recorder: Recorder, kind: str, what: str, impl: Callable[..., Any],
               redirect: str, original: Callable[..., Any] | None = None,
               touch: bool = True) -> Callable[..., Any]:
    """``impl`` recording a touch when the program calls it; torch's own calls get ``original``
    unrecorded (under --pretend-cuda torch itself still sees no GPU)."""
    real = original if original is not None else impl

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if recorder.site(kind, what, redirect=redirect, touch=touch, through_torch=False) is None:
            return real(*args, **kwargs)
        return impl(*args, **kwargs)

    if not isinstance(real, type):
        functools.update_wrapper(wrapper, real)
    return wrapper


def _wrap_init(cls: type, change: Callable[..., tuple[tuple, dict]]) -> None:
    """Wrap ``cls.__init__`` in place: ``change(args, kwargs)`` records and may alter the call.
    A C type that refuses a new ``__init__`` stays unwrapped (and unrecorded)."""
    original = cls.__init__  # type: ignore[misc]

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        args, kwargs = change(args, kwargs)
        original(self, *args, **kwargs)

    try:
        cls.__init__ = __init__  # type: ignore[misc]
    except TypeError:
        pass


def _record_construction(cls: type, recorder: Recorder, what: str) -> None:
    """Record the program constructing a ``torch.cuda`` class, before ``__new__`` (where
    ``torch.cuda.Stream`` fails on a machine without CUDA) when the class defines one."""
    def record(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        recorder.site("cuda-api", what, through_torch=False)
        return args, kwargs

    if "__new__" not in vars(cls):
        _wrap_init(cls, record)
        return
    original = vars(cls)["__new__"]
    original = original.__func__ if isinstance(original, staticmethod) else original

    def __new__(klass: type, *args: Any, **kwargs: Any) -> Any:
        record(args, kwargs)
        return original(klass, *args, **kwargs)

    try:
        cls.__new__ = staticmethod(__new__)  # type: ignore[assignment]
    except TypeError:
        pass


def _argument(args: tuple, kwargs: dict, index: int, name: str, default: Any) -> Any:
    return args[index] if len(args) > index else kwargs.get(name, default)


def _replace_argument(args: tuple, kwargs: dict, index: int, name: str, value: Any) -> tuple[tuple, dict]:
    if len(args) > index:
        return (*args[:index], value, *args[index + 1:]), kwargs
    return args, {**kwargs, name: value}


# -- placements ----------------------------------------------------------------------------------
def _install_placements(torch: Any, recorder: Recorder, pretend: bool, host_device: str | None) -> None:
    """CUDA placements recorded (sent to the CPU when ``pretend``); placements on the simulated
    ``host_device`` (neuron, mps) sent to the CPU and recorded as no CUDA touch."""
    from torch.overrides import TorchFunctionMode

    tensor = torch.Tensor
    to, cuda_method, pin = tensor.to, tensor.cuda, tensor.pin_memory
    redirect = "placed on the CPU" if pretend else ""
    #: functions whose device is positional, and where (nn.Module.to parses its arguments first)
    device_first = {to: 1, torch._C._nn._parse_to: 0}

    class PlacementMode(TorchFunctionMode):
        """Sees every torch function call, tensor methods and factories included."""

        def __torch_function__(self, func: Callable[..., Any], types: object, args: tuple[Any, ...] = (),
                               kwargs: dict[str, Any] | None = None) -> Any:
            kwargs = kwargs or {}
            if func is cuda_method:
                recorder.site("placement", "Tensor.cuda()", redirect=redirect)
                if pretend:
                    return args[0]
            elif func is pin:
                recorder.site("placement", "Tensor.pin_memory()", redirect="returns the tensor" if pretend else "")
                if pretend:
                    return args[0]
            elif func in device_first and len(args) > device_first[func] and (
                    is_cuda(args[device_first[func]]) or type(args[device_first[func]]) is int):
                # an int is a CUDA device index: `x.to(local_rank)`, `model.to(local_rank)`
                at = device_first[func]
                name = "Tensor.to" if func is to else "Module.to"
                recorder.site("placement", f"{name}({args[at]!r})", redirect=redirect)
                if pretend:
                    args = (*args[:at], "cpu", *args[at + 1:])
            elif "device" in kwargs and (is_cuda(kwargs["device"]) or (
                    type(kwargs["device"]) is int and func is not to)):
                name = f"Tensor.{func.__name__}" if getattr(tensor, func.__name__, None) is func else \
                    f"torch.{getattr(func, '__name__', func)}"
                recorder.site("placement", f"{name}(device={kwargs['device']!r})", redirect=redirect)
                if pretend:
                    kwargs = {**kwargs, "device": "cpu"}
            elif host_device is not None:
                args, kwargs = on_host(func, args, kwargs)
            return func(*args, **kwargs)

    def on_host(func: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        at = device_first.get(func)
        if at is not None and len(args) > at and device_type(args[at]) == host_device:
            recorder.site("device-placement", f"to({args[at]!r})", redirect="placed on the CPU", touch=False)
            return (*args[:at], "cpu", *args[at + 1:]), kwargs
        if device_type(kwargs.get("device")) == host_device:
            recorder.site("device-placement", f"{getattr(func, '__name__', func)}(device={kwargs['device']!r})",
                          redirect="placed on the CPU", touch=False)
            return args, {**kwargs, "device": "cpu"}
        return args, kwargs

    PlacementMode().__enter__()  # for the rest of the process

    real = torch.Generator

    class GeneratorMeta(type(real)):  # type: ignore[misc]
        def __instancecheck__(cls, obj: object) -> bool:
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, real)

    class Generator(real, metaclass=GeneratorMeta):  # type: ignore[misc, valid-type]
        """torch.Generator, recording ``device="cuda"``; instances are the real class. On the
        simulated MPS host an MPS generator is made on the CPU, as its placements are (on the
        simulated Neuron host a Neuron generator raises, as reported of TorchNeuron)."""

        def __new__(cls, device: Any = "cpu") -> Any:
            if is_cuda(device):
                recorder.site("placement", f"torch.Generator(device={device!r})", redirect=redirect)
                if pretend:
                    device = "cpu"
            elif host_device == "mps" and device_type(device) == "mps":
                recorder.site("device-placement", f"torch.Generator(device={device!r})",
                              redirect="placed on the CPU", touch=False)
                device = "cpu"
            return real(device)

    Generator.__module__, Generator.__qualname__ = "torch", "Generator"
    torch.Generator = Generator

    from torch.nn.parallel import DistributedDataParallel

    def ddp(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        ids = _argument(args, kwargs, 1, "device_ids", None)
        if ids:
            recorder.site("placement", f"DistributedDataParallel(device_ids={ids!r})",
                          redirect="device_ids dropped (a CPU module)" if pretend else "")
            if pretend:
                args, kwargs = _replace_argument(args, kwargs, 1, "device_ids", None)
                args, kwargs = _replace_argument(args, kwargs, 2, "output_device", None)
        return args, kwargs

    _wrap_init(DistributedDataParallel, ddp)

    load = torch.load

    @functools.wraps(load)
    def load_wrapper(*args: Any, **kwargs: Any) -> Any:
        where = kwargs.get("map_location")
        if is_cuda(where) or type(where) is int:
            recorder.site("placement", f"torch.load(map_location={where!r})", redirect=redirect)
            if pretend:
                kwargs = {**kwargs, "map_location": "cpu"}
        elif host_device is not None and device_type(where) == host_device:
            recorder.site("device-placement", f"torch.load(map_location={where!r})",
                          redirect="placed on the CPU", touch=False)
            kwargs = {**kwargs, "map_location": "cpu"}
        return load(*args, **kwargs)

    torch.load = load_wrapper


# -- mixed precision -----------------------------------------------------------------------------
def _install_amp(torch: Any, recorder: Recorder, pretend: bool) -> None:
    from torch.amp.autocast_mode import autocast
    from torch.amp.grad_scaler import GradScaler

    def autocast_change(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        device_type = _argument(args, kwargs, 0, "device_type", None)
        if device_type == "cuda":
            dtype = _argument(args, kwargs, 1, "dtype", None)
            recorder.site("autocast", f"autocast('cuda', dtype={dtype})",
                          redirect="CPU autocast, bfloat16" if pretend else "")
            if pretend:
                args, kwargs = _replace_argument(args, kwargs, 0, "device_type", "cpu")
                args, kwargs = _replace_argument(args, kwargs, 1, "dtype", torch.bfloat16)
        return args, kwargs

    def scaler_change(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        device = _argument(args, kwargs, 0, "device", "cuda")
        if device == "cuda":
            enabled = _argument(args, kwargs, 5, "enabled", True)
            recorder.site("grad-scaler", f"GradScaler('cuda', enabled={enabled})",
                          redirect="GradScaler('cpu')" if pretend else "")
            if pretend:
                args, kwargs = _replace_argument(args, kwargs, 0, "device", "cpu")
        return args, kwargs

    _wrap_init(autocast, autocast_change)
    _wrap_init(GradScaler, scaler_change)


def _install_accelerator(torch: Any, recorder: Recorder, device: str, calls: list[str]) -> None:
    """Device-agnostic code (``torch.accelerator``) sees the simulated device (CUDA under
    --pretend-cuda): its placements are then recorded like any other. Not touches by themselves."""
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None:
        return
    for name, answer in hosts.accelerator_answers(torch, device, calls).items():
        original = getattr(accelerator, name, None)
        if original is not None:
            wrapped = _recording(recorder, "accelerator", f"torch.accelerator.{name}", answer,
                                 f"answers as a {device} machine would", original, touch=False)
            setattr(accelerator, name, wrapped)
    # without an argument, torch.get_device_module() answers for the current accelerator
    real_module = torch.get_device_module
    torch.get_device_module = _recording(
        recorder, "accelerator", "torch.get_device_module",
        lambda module=None: real_module(device if module is None else module), "", real_module, touch=False)


# -- torch.compile -------------------------------------------------------------------------------
def _install_compile(torch: Any, recorder: Recorder, pretend: bool) -> None:
    original = torch.compile

    @functools.wraps(original)
    def compile(model: Any = None, **kwargs: Any) -> Any:
        backend = kwargs.get("backend", "inductor")
        if backend != "inductor":
            return original(model, **kwargs) if model is not None else original(**kwargs)
        mode = kwargs.get("mode")
        recorder.site("compile", f"torch.compile(backend='inductor', mode={mode!r})",
                      redirect="not compiled: runs eagerly" if pretend else "",
                      touch=pretend or mode in CUDA_GRAPH_MODES, through_torch=False)
        if pretend:  # Inductor would emit kernels for a GPU that is not there
            return model if model is not None else (lambda fn: fn)
        return original(model, **kwargs) if model is not None else original(**kwargs)

    torch.compile = compile


# -- distributed ---------------------------------------------------------------------------------
def _install_distributed(torch: Any, recorder: Recorder, pretend: bool) -> None:
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available():
        return
    from torch.distributed import distributed_c10d

    def wrap(name: str, backend_index: int) -> None:
        original = getattr(distributed_c10d, name)

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            backend = _argument(args, kwargs, backend_index, "backend", None)
            if isinstance(backend, str) and "nccl" in backend.lower():
                recorder.site("process-group", f"{name}(backend={backend!r})",
                              redirect="gloo" if pretend else "")
                if pretend:
                    args, kwargs = _replace_argument(args, kwargs, backend_index, "backend", "gloo")
            device_id = kwargs.get("device_id")
            if device_id is not None and (is_cuda(device_id) or isinstance(device_id, int)):
                recorder.site("placement", f"{name}(device_id={device_id!r})",
                              redirect="device_id dropped" if pretend else "")
                if pretend:
                    kwargs = {k: v for k, v in kwargs.items() if k != "device_id"}
            return original(*args, **kwargs)

        for module in (dist, distributed_c10d):
            if getattr(module, name, None) is original:
                setattr(module, name, wrapper)

    wrap("init_process_group", 0)
    wrap("new_group", 2)


# -- environment variables -----------------------------------------------------------------------
def install_environ(recorder: Recorder) -> None:
    """From the start: programs read CUDA_VISIBLE_DEVICES before they import torch."""
    environ_class = type(os.environ)

    def watched(key: Any) -> bool:
        return isinstance(key, str) and key.startswith(CUDA_ENV)

    class AuditedEnviron(environ_class):  # type: ignore[misc, valid-type]
        """os.environ recording the program's reads and writes of CUDA-only variables."""

        def __getitem__(self, key: Any) -> Any:
            if watched(key):
                recorder.site("env", f"reads ${key}", through_torch=False)
            return super().__getitem__(key)

        def __setitem__(self, key: Any, value: Any) -> None:
            if watched(key):
                recorder.site("env", f"sets ${key}", through_torch=False)
            super().__setitem__(key, value)

    os.environ.__class__ = AuditedEnviron


# -- what cannot run without a GPU ---------------------------------------------------------------
def install_extension_hooks(module: Any, recorder: Recorder, pretend: bool) -> None:
    """Custom CUDA kernels built at run time (``torch.utils.cpp_extension.load*``)."""
    for name in ("load", "load_inline"):
        original = getattr(module, name, None)
        if original is None:
            continue

        def wrapper(*args: Any, __original: Any = original, __name: str = name, **kwargs: Any) -> Any:
            sources = list(_argument(args, kwargs, 1, "sources" if __name == "load" else "cpp_sources", []) or [])
            has_cuda = bool(kwargs.get("with_cuda")) or bool(kwargs.get("cuda_sources")) or any(
                str(s).endswith((".cu", ".cuh")) for s in (sources if not isinstance(sources, str) else [sources]))
            if has_cuda:
                what = f"torch.utils.cpp_extension.{__name}(...) with CUDA sources"
                if pretend:
                    _fail(recorder, what, "a custom CUDA kernel needs nvcc and a GPU")
                recorder.site("unsupported", what, through_torch=False)
            return __original(*args, **kwargs)

        functools.update_wrapper(wrapper, original)
        setattr(module, name, wrapper)


def install_triton_hooks(module: Any, recorder: Recorder, pretend: bool) -> None:
    """Triton kernel launches (``kernel[grid](...)``)."""
    recorder.add_library(os.path.dirname(os.path.dirname(os.path.abspath(module.__file__))))
    interface = getattr(module, "KernelInterface", None)
    if interface is None:
        return
    original = interface.__getitem__

    def __getitem__(self: Any, grid: Any) -> Any:
        what = f"Triton kernel launch {getattr(getattr(self, 'fn', self), '__name__', '')}[grid]"
        if recorder.caller(sys._getframe(1), through_torch=False) is not None:
            if pretend:
                _fail(recorder, what, "Triton compiles GPU kernels")
            recorder.site("unsupported", what, through_torch=False)
        return original(self, grid)

    interface.__getitem__ = __getitem__
