"""A deterministic generator of realistic PyTorch files, for the corpus test and the benchmark.

``generate_corpus(directory, n_files, seed=0, target_bytes=None)`` writes ``n_files`` ``.py``
files under ``directory`` (in a small package tree) and returns their paths, sorted. The same
arguments always give the same bytes.

The files are built from the shapes listed in ``shared/reference/real-world-patterns.md``: device
strings in every position (keyword, ``torch.device``, comparison, dict, conditional branch,
argparse default, function default, dataclass field, f-string), the ``is_available`` idiom,
``.cuda()``, autocast as ``with`` and as decorator, GradScaler, ``torch.compile`` with modes,
cuDNN flags, ``init_process_group("nccl")``, DDP ``device_ids``, Hugging Face ``generate`` /
``TrainingArguments``, Triton and flash-attn imports guarded and unguarded, with varied import
aliases (``import torch as T``, ``from torch import cuda``, ``from torch.cuda.amp import ...``).
About 60% of the files have no CUDA content at all (plain model, data and utility code).

The bytes vary the way real trees do: LF and CRLF (and a few mixed) line endings, tabs or spaces,
a UTF-8 BOM, latin-1 files with an encoding cookie, missing final newlines, comments everywhere,
decorators and nesting.

``python tests/corpus_gen.py DIR N [--seed S] [--mb M]`` writes a corpus from the shell.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Callable

__all__ = ["generate_corpus"]

# -- small vocabulary ----------------------------------------------------------------------
NOUNS = ["encoder", "decoder", "block", "head", "stem", "backbone", "adapter", "router", "mixer",
         "embed", "proj", "gate", "pool", "neck", "tower", "cell", "layer", "unit", "stage"]
ADJ = ["residual", "gated", "deep", "wide", "tiny", "causal", "local", "global",
       "shared", "light", "dense", "conv", "token", "patch", "cross", "self"]
CAMEL = ["Residual", "Gated", "Deep", "Wide", "Tiny", "Causal", "Local", "Global", "Shared",
         "Light", "Dense", "Token", "Patch", "Cross", "Vision", "Audio", "Text", "Graph"]
KINDS = ["Block", "Encoder", "Decoder", "Head", "Mixer", "Adapter", "Stem", "Net", "Model",
         "Attention", "MLP", "Router", "Tower"]
COMMENTS = ["# keep this in sync with the config", "# TODO: make configurable",
            "# see the paper, section 3.2", "# NOTE: shapes are (batch, seq, dim)",
            "# cheap path first", "# pylint: disable=invalid-name", "# noqa: E501",
            "# this mirrors the reference implementation", "# fmt: off", "# fmt: on",
            "# type: ignore", "# hack: upstream bug", "# XXX revisit after the refactor"]
LATIN1_WORDS = ["Jérôme", "Müller", "façade", "naïve", "Ångström", "señor", "Zoë", "crème brûlée"]


class _Writer:
    """Lines at an indentation level; rendered with the file's indent unit."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.lines: list[tuple[int, str]] = []
        self.level = 0

    def add(self, text: str = "") -> None:
        """Add lines; four leading spaces in ``text`` are one more level."""
        for raw in text.split("\n"):
            stripped = raw.lstrip(" ")
            extra = (len(raw) - len(stripped)) // 4
            self.lines.append((self.level + extra if stripped else 0, stripped))

    def block(self, text: str) -> None:
        """Add a dedented multi-line snippet; leading spaces (4 per level) become levels."""
        for raw in text.strip("\n").split("\n"):
            stripped = raw.lstrip(" ")
            extra = (len(raw) - len(stripped)) // 4
            self.lines.append((self.level + extra if stripped else 0, stripped))

    def maybe_comment(self, p: float = 0.15) -> None:
        if self.rng.random() < p:
            self.add(self.rng.choice(COMMENTS))

    def render(self, unit: str) -> str:
        return "\n".join((unit * level + text) if text else "" for level, text in self.lines)


def _name(rng: random.Random) -> str:
    return f"{rng.choice(ADJ)}_{rng.choice(NOUNS)}"


def _cls(rng: random.Random) -> str:
    return rng.choice(CAMEL) + rng.choice(KINDS)


def _q(rng: random.Random, text: str) -> str:
    return f"'{text}'" if rng.random() < 0.3 else f'"{text}"'


# -- plain code (no CUDA) ----------------------------------------------------------------------
def _plain_module_class(w: _Writer, rng: random.Random, t: str) -> None:
    name, dim = _cls(rng), rng.choice([64, 128, 256, 384, 512, 768])
    w.block(f'''
class {name}(nn.Module):
    """{rng.choice(CAMEL)} {rng.choice(NOUNS)} with a residual connection."""

    def __init__(self, dim: int = {dim}, hidden: int = {dim * 4}, drop: float = {rng.choice([0.0, 0.1, 0.2])}) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(drop)

    def forward(self, x: {t}.Tensor) -> {t}.Tensor:
        residual = x
        x = self.norm(x)
        x = self.drop(self.fc2(self.act(self.fc1(x))))
        return residual + x
''')


def _plain_conv(w: _Writer, rng: random.Random, t: str) -> None:
    name, c = _cls(rng), rng.choice([16, 32, 64])
    pad = rng.choice(["padding=1", "padding=k // 2", "1"])
    w.block(f'''
class {name}(nn.Module):
    def __init__(self, c_in: int = 3, c_out: int = {c}, k: int = 3, stride: int = 1):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, k, stride, {pad}, bias=False)
        self.bn = nn.BatchNorm2d(c_out)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))
''')


def _plain_attention(w: _Writer, rng: random.Random, t: str) -> None:
    name = _cls(rng)
    w.block(f'''
class {name}(nn.Module):
    def __init__(self, dim, heads=8, bias=True):
        super().__init__()
        assert dim % heads == 0, "dim must divide heads"
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=bias)
        self.out = nn.Linear(dim, dim, bias=bias)

    def forward(self, x, mask=None):
        b, n, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (z.view(b, n, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)
        y = y.transpose(1, 2).contiguous().view(b, n, d)
        return self.out(y)
''')


def _plain_dataset(w: _Writer, rng: random.Random, t: str) -> None:
    name = rng.choice(CAMEL) + "Dataset"
    w.block(f'''
class {name}(Dataset):
    """Reads (text, label) pairs from a TSV file."""

    def __init__(self, path, max_len={rng.choice([128, 256, 512])}):
        self.items = []
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                text, _, label = line.rstrip("\\n").partition("\\t")
                if not text:
                    continue  # skip blank lines
                self.items.append((text[:max_len], int(label or 0)))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        text, label = self.items[index]
        return {{"text": text, "label": {t}.tensor(label)}}
''')


def _plain_utils(w: _Writer, rng: random.Random, t: str) -> None:
    fn = _name(rng)
    w.block(f'''
def {fn}_count(model) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def {fn}_accuracy(logits, target, topk=(1,)):
    maxk = max(topk)
    _, pred = logits.topk(maxk, 1, True, True)
    correct = pred.t().eq(target.view(1, -1).expand_as(pred.t()))
    return [correct[:k].reshape(-1).float().sum(0) * 100.0 / target.size(0) for k in topk]
''')


def _plain_meter(w: _Writer, rng: random.Random, t: str) -> None:
    w.block(f'''
class {rng.choice(CAMEL)}Meter:
    def __init__(self, name, fmt=":f"):
        self.name, self.fmt = name, fmt
        self.reset()

    def reset(self):
        self.val = self.avg = self.sum = 0.0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / max(1, self.count)

    def __str__(self):
        return ("{{name}} {{val" + self.fmt + "}} ({{avg" + self.fmt + "}})").format(**self.__dict__)
''')


def _plain_config(w: _Writer, rng: random.Random, t: str) -> None:
    w.block(f'''
@dataclass
class {rng.choice(CAMEL)}Config:
    n_layer: int = {rng.choice([6, 12, 24])}
    n_head: int = {rng.choice([8, 12, 16])}
    n_embd: int = {rng.choice([384, 768, 1024])}
    dropout: float = 0.0
    bias: bool = {rng.choice(["True", "False"])}
    vocab_size: int = 50304
    tags: list = field(default_factory=list)

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head
''')


def _plain_nested(w: _Writer, rng: random.Random, t: str) -> None:
    fn = _name(rng)
    w.block(f'''
def {fn}_schedule(step, warmup={rng.choice([100, 2000])}, total=100000, base=3e-4, floor=3e-5):
    def linear(s):
        return base * s / max(1, warmup)

    def cosine(s):
        import math
        ratio = (s - warmup) / max(1, total - warmup)
        coeff = 0.5 * (1.0 + math.cos(math.pi * min(1.0, ratio)))
        return floor + coeff * (base - floor)

    if step < warmup:
        return linear(step)
    elif step > total:
        return floor
    else:
        try:
            return cosine(step)
        except (ValueError, ZeroDivisionError):
            return floor
''')


def _plain_decorated(w: _Writer, rng: random.Random, t: str) -> None:
    fn = _name(rng)
    w.block(f'''
@functools.lru_cache(maxsize=None)
def {fn}_mask(n: int):
    return {t}.tril({t}.ones(n, n, dtype={t}.bool))


@{t}.no_grad()
def {fn}_evaluate(model, loader, criterion):
    model.eval()
    total, count = 0.0, 0
    for batch in loader:
        x, y = batch["x"], batch["y"]
        total += criterion(model(x), y).item() * len(y)
        count += len(y)
    model.train()
    return total / max(count, 1)
''')


def _plain_lambda_comp(w: _Writer, rng: random.Random, t: str) -> None:
    fn = _name(rng)
    w.block(f'''
{fn.upper()}_TABLE = {{
    "relu": lambda x: x.clamp(min=0),
    "square": lambda x: x * x,
    "identity": lambda x: x,
}}
{fn}_widths = [2 ** i for i in range({rng.randint(3, 8)}) if i % 2 == 0]
{fn}_pairs = {{k: v for k, v in zip("abc", range(3))}}
''')


def _plain_async_match(w: _Writer, rng: random.Random, t: str) -> None:
    fn = _name(rng)
    w.block(f'''
async def {fn}_fetch(queue):
    while True:
        item = await queue.get()
        if item is None:
            break
        yield item


def {fn}_kind(obj):
    if isinstance(obj, (list, tuple)) and len(obj) == 2:
        first, second = obj
        return f"pair({{first!r}}, {{second!r}})"
    elif isinstance(obj, dict):
        return "mapping with " + ", ".join(sorted(map(str, obj)))
    return "other"
''')


PLAIN: list[Callable[[_Writer, random.Random, str], None]] = [
    _plain_module_class, _plain_conv, _plain_attention, _plain_dataset, _plain_utils, _plain_meter,
    _plain_config, _plain_nested, _plain_decorated, _plain_lambda_comp, _plain_async_match,
]
#: plain snippets that contain no pre-filter token at all (for utility-only files)
PURE = [_plain_module_class, _plain_utils, _plain_meter, _plain_config, _plain_nested,
        _plain_lambda_comp, _plain_async_match, _plain_attention]


# -- CUDA snippets ---------------------------------------------------------------------------
class _Ctx:
    """What the file imported: the spelling each snippet must use."""

    def __init__(self, rng: random.Random) -> None:
        self.t = rng.choice(["torch"] * 6 + ["T", "th"])
        self.cuda_alias = rng.random() < 0.2  # from torch import cuda
        self.amp_names = rng.random() < 0.3  # from torch.cuda.amp import autocast, GradScaler
        self.dist = rng.choice(["dist", "torch.distributed"])
        self.init_pg_name = rng.random() < 0.3  # from torch.distributed import init_process_group
        self.ddp = rng.random() < 0.5
        self.hf = rng.random() < 0.15
        self.triton = rng.random() < 0.08
        self.flash = rng.random() < 0.1
        self.guarded = rng.random() < 0.65

    @property
    def cuda(self) -> str:
        return "cuda" if self.cuda_alias else f"{self.t}.cuda"

    def imports(self, rng: random.Random) -> list[str]:
        lines = ["import os", "import math"]
        if rng.random() < 0.5:
            lines.append("import argparse")
        lines.append("import torch" if self.t == "torch" else f"import torch as {self.t}")
        lines.append("import torch.nn as nn" if rng.random() < 0.7 else "from torch import nn")
        lines.append("import torch.nn.functional as F")
        if self.t != "torch" and rng.random() < 0.5:
            lines.append("import torch")
        if self.cuda_alias:
            lines.append("from torch import cuda")
        if self.amp_names:
            lines.append("from torch.cuda.amp import autocast, GradScaler")
        if self.dist == "dist":
            lines.append("import torch.distributed as dist")
        else:
            lines.append("import torch.distributed")
        if self.init_pg_name:
            lines.append("from torch.distributed import init_process_group, destroy_process_group")
        if self.ddp:
            lines.append("from torch.nn.parallel import DistributedDataParallel as DDP")
        lines.append("from torch.utils.data import DataLoader, Dataset")
        lines += ["from dataclasses import dataclass, field", "import functools",
                  "from contextlib import nullcontext"]
        if self.hf:
            lines.append("from transformers import AutoModelForCausalLM, AutoTokenizer, "
                         "TrainingArguments")
        if self.triton and not self.guarded:
            lines += ["import triton", "import triton.language as tl"]
        if self.flash and not self.guarded:
            lines.append("from flash_attn import flash_attn_func")
        return lines


def _s_device_setup(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    t, q = c.t, (lambda s: _q(rng, s))
    choice = rng.randrange(9)
    if choice == 0:
        w.add(f"device = {q('cuda')} if {c.cuda}.is_available() else {q('cpu')}")
    elif choice == 1:
        w.add(f"DEVICE = {t}.device({q('cuda:0')} if {c.cuda}.is_available() else {q('cpu')})")
    elif choice == 2:
        w.add(f"device = {q('cuda')}  # examples: 'cpu', 'cuda', 'cuda:0'")
    elif choice == 3:
        w.add(f"device_type = {q('cuda')} if {q('cuda')} in device else {q('cpu')}")
    elif choice == 4:
        w.add(f"use_cuda = not args.no_cuda and {c.cuda}.is_available()")
        w.add(f"device = {t}.device({q('cuda')} if use_cuda else {q('cpu')})")
    elif choice == 5:
        w.add(f"BACKENDS = {{{q('cuda')}: {q('nccl')}, {q('cpu')}: {q('gloo')}}}")
    elif choice == 6:
        w.add(f"SUPPORTED = ({q('cuda')}, {q('xpu')}, {q('mps')})")
    elif choice == 7:
        w.add(f"n_gpus = {c.cuda}.device_count()")
    else:
        w.add(f"if not {c.cuda}.is_available():")
        w.add(f"    raise SystemExit({q('this script needs a GPU')})")


def _s_device_fn(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    t, fn = c.t, _name(rng)
    dev = rng.choice(['"cuda"', "'cuda:0'", 'f"cuda:{local_rank}"', '"cuda:1"'])
    w.block(f'''
def {fn}_to_device(batch, device={dev}, non_blocking=True):
    """Move every tensor of ``batch`` to ``device``."""
    if isinstance(batch, {t}.Tensor):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, dict):
        return {{k: {fn}_to_device(v, device) for k, v in batch.items()}}
    return [{fn}_to_device(v, device) for v in batch]
''')
    if rng.random() < 0.5:
        w.block(f'''
def {fn}_place(model, local_rank=0):
    if {c.cuda}.is_available():
        {c.cuda}.set_device(local_rank)
        model = model.cuda(local_rank)
        x = {t}.zeros(8, 16, device=f"cuda:{{local_rank}}")
    else:
        model = model.cpu()
        x = {t}.zeros(8, 16)
    if x.is_cuda:
        print("on gpu", {c.cuda}.get_device_name(0))
    return model, x
''')


def _s_argparse(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    w.block(f'''
def get_args():
    parser = argparse.ArgumentParser(description="{rng.choice(CAMEL)} training")
    parser.add_argument("--device", type=str, default={_q(rng, "cuda")}, help="cuda or cpu")
    parser.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    parser.add_argument("--lr", type=float, default={rng.choice(["3e-4", "1e-3", "0.1"])})
    parser.add_argument("--epochs", type=int, default={rng.randint(1, 300)})
    parser.add_argument("--no-cuda", action="store_true", default=False)
    parser.add_argument("--compile", action="store_true")
    return parser.parse_args()
''')


def _s_config_dataclass(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    w.block(f'''
@dataclass
class TrainConfig:
    device: str = {_q(rng, "cuda")}
    dtype: str = "bfloat16" if {c.cuda}.is_available() and {c.cuda}.is_bf16_supported() else "float16"
    compile: bool = True
    backend: str = "nccl"
    batch_size: int = {rng.choice([8, 16, 32, 64])}
''')


def _s_train_loop(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    t = c.t
    if c.amp_names:
        ac = rng.choice(["autocast()", "autocast(dtype=torch.float16)", "autocast(enabled=args.amp)"])
        sc = rng.choice(["GradScaler()", "GradScaler(enabled=use_amp)"])
    else:
        ac = rng.choice([f'{t}.autocast(device_type="cuda", dtype={t}.bfloat16)',
                         f"{t}.cuda.amp.autocast()", f'{t}.amp.autocast("cuda")',
                         f"{t}.autocast(device_type=device_type, dtype=ptdtype)"])
        sc = rng.choice([f"{t}.cuda.amp.GradScaler()", f'{t}.amp.GradScaler("cuda")',
                         f"{t}.cuda.amp.GradScaler(enabled=(dtype == 'float16'))"])
    loader = rng.choice(["loader", "train_loader", "dataloader"])
    w.block(f'''
def train_one_epoch(model, {loader}, optimizer, epoch, use_amp=True, log_every=50):
    model.train()
    scaler = {sc}
    for step, (images, target) in enumerate({loader}):
        images = images.cuda(non_blocking=True)
        target = target.to("cuda", non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with {ac}:
            output = model(images)
            loss = F.cross_entropy(output, target)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        if step % log_every == 0:
            {c.cuda}.synchronize()
            mem = {c.cuda}.max_memory_allocated() / 2 ** 20
            print(f"epoch {{epoch}} step {{step}} loss {{loss.item():.4f}} mem {{mem:.0f}}MiB")
''')


def _s_autocast_decorator(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    dec = "@autocast()" if c.amp_names else f"@{c.t}.cuda.amp.autocast()"
    w.block(f'''
class {_cls(rng)}(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    {dec}
    def forward(self, x):
        return self.proj(x)
''')


def _s_ctx_switch(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    t = c.t
    w.block(f'''
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = {{"float32": {t}.float32, "bfloat16": {t}.bfloat16, "float16": {t}.float16}}[dtype]
ctx = nullcontext() if device_type == "cpu" else {t}.amp.autocast(device_type=device_type, dtype=ptdtype)
''')


def _s_compile(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    t = c.t
    kind = rng.randrange(6)
    if kind == 0:
        w.add(f"model = {t}.compile(model)")
    elif kind == 1:
        w.add(f'model = {t}.compile(model, mode="reduce-overhead")')
    elif kind == 2:
        w.add(f'model = {t}.compile(model, mode="max-autotune", fullgraph=True)')
    elif kind == 3:
        w.add(f"model = {t}.compile(model, dynamic=True)")
    elif kind == 4:
        w.add("if args.compile:")
        w.add("    print('compiling the model... (takes a ~minute)')")
        w.add(f"    model = {t}.compile(model, backend=args.backend)")
    else:
        w.block(f'''
@{t}.compile
def fused_gelu(x):
    return 0.5 * x * (1.0 + {t}.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
''')


def _s_cudnn(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    t = c.t
    flags = [f"{t}.backends.cudnn.benchmark = True", f"{t}.backends.cudnn.deterministic = False",
             f"{t}.backends.cuda.matmul.allow_tf32 = True  # allow tf32 on matmul",
             f"{t}.backends.cudnn.allow_tf32 = True"]
    for flag in rng.sample(flags, rng.randint(1, len(flags))):
        w.add(flag)


def _s_seed(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    w.block(f'''
def set_seed(seed):
    import random
    random.seed(seed)
    {c.t}.manual_seed(seed)
    {c.cuda}.manual_seed_all(seed)
''')


def _s_distributed(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    d = c.dist
    init = "init_process_group" if c.init_pg_name else f"{d}.init_process_group"
    backend = rng.choice(['"nccl"', 'backend="nccl"', "backend=args.backend",
                          'backend="nccl" if torch.cuda.is_available() else "gloo"'])
    wrap = ("DDP(model, device_ids=[local_rank], output_device=local_rank)" if c.ddp
            else "model")
    w.block(f'''
def setup_distributed(model):
    ddp = int(os.environ.get("RANK", -1)) != -1
    if not ddp:
        return model, 0
    {init}({backend})
    local_rank = int(os.environ["LOCAL_RANK"])
    device = f"cuda:{{local_rank}}"
    {c.cuda}.set_device(device)
    model = model.to(device)
    model = {wrap}
    {d}.barrier()
    return model, local_rank
''')


def _s_misc_runtime(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    t = c.t
    options = [
        f"{c.cuda}.empty_cache()",
        f"start = {c.cuda}.Event(enable_timing=True)",
        f"free, total = {c.cuda}.mem_get_info()",
        "os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"0\"",
        "model = model.half()",
        "model = nn.DataParallel(model)",
        f"buf = {t}.cuda.FloatTensor(16).zero_()",
        f"gen = {t}.Generator(device=\"cuda\")",
        f"if {c.cuda}.get_device_capability()[0] >= 8:\n    use_flash = True",
        f"print(\"using cuda\" if {c.cuda}.is_available() else \"using cpu\")",
        f"x = x.to(memory_format={t}.channels_last)",
        f"print({c.cuda}.memory_summary())",
    ]
    for line in rng.sample(options, rng.randint(1, 4)):
        w.add(line)


def _s_hf(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    w.block(f'''
def run_generation(name="gpt2", prompt="Hello, my dog is"):
    tokenizer = AutoTokenizer.from_pretrained(name)
    model = AutoModelForCausalLM.from_pretrained(name, device_map="auto", torch_dtype="auto")
    inputs = tokenizer(prompt, return_tensors="pt").to("cuda")
    out = model.generate(**inputs, max_new_tokens={rng.choice([20, 50, 128])}, do_sample=False)
    return tokenizer.decode(out[0], skip_special_tokens=True)


training_args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size={rng.choice([4, 8])},
    fp16={rng.choice(["True", "False"])},
    torch_compile=True,
)
''')


def _s_triton(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    if c.guarded:
        w.block('''
try:
    import triton
    import triton.language as tl
    HAS_TRITON = True
except ImportError:  # optional fast path
    HAS_TRITON = False
''')
    kernel = '''
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
'''
    if c.guarded:
        w.add("")
        w.add("if HAS_TRITON:")
        w.level += 1
        w.block(kernel)
        w.level -= 1
    else:
        w.block(kernel)


def _s_flash(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    if c.guarded:
        w.block('''
try:
    from flash_attn import flash_attn_func
except ImportError:
    flash_attn_func = None
''')
    w.block('''
def attend(q, k, v, causal=True):
    if flash_attn_func is not None and q.is_cuda:
        return flash_attn_func(q, k, v, causal=causal)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
''')


def _s_main(w: _Writer, rng: random.Random, c: _Ctx) -> None:
    t = c.t
    w.block(f'''
def main():
    args = get_args() if "get_args" in globals() else argparse.Namespace(device="cuda", no_cuda=False)
    device = {t}.device("cuda" if {c.cuda}.is_available() and not args.no_cuda else "cpu")
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    if device.type == "cuda":
        model = model.cuda()
    x = {t}.randn(4, 32, device=device)
    with {t}.no_grad():
        print(model(x).shape)


if __name__ == "__main__":
    main()
''')


CUDA_SNIPPETS: list[Callable[[_Writer, random.Random, _Ctx], None]] = [
    _s_device_fn, _s_argparse, _s_config_dataclass, _s_train_loop, _s_autocast_decorator,
    _s_ctx_switch, _s_compile, _s_cudnn, _s_seed, _s_distributed, _s_misc_runtime,
]


# -- whole files ---------------------------------------------------------------------------
def _plain_file(rng: random.Random, pure: bool, target: int) -> tuple[_Writer, str]:
    w = _Writer(rng)
    t = rng.choice(["torch"] * 5 + ["T"])
    w.add(f'"""{rng.choice(CAMEL)} {rng.choice(NOUNS)} utilities."""')
    w.add("")
    w.add("import functools")
    w.add("from dataclasses import dataclass, field")
    w.add("")
    w.add("import torch" if t == "torch" else "import torch as T")
    w.add("import torch.nn as nn")
    w.add("import torch.nn.functional as F")
    if not pure:
        w.add("from torch.utils.data import Dataset")
    pool = PURE if pure else PLAIN
    size = 0
    while size < target:
        w.add("")
        w.add("")
        w.maybe_comment(0.3)
        before = len(w.lines)
        rng.choice(pool)(w, rng, t)
        size += sum(len(text) + 4 * lvl + 1 for lvl, text in w.lines[before:])
    return w, t


def _cuda_file(rng: random.Random, target: int) -> _Writer:
    w = _Writer(rng)
    c = _Ctx(rng)
    w.add(f'"""{rng.choice(CAMEL)} {rng.choice(["training", "inference", "fine-tuning"])} script."""')
    w.add("")
    for line in c.imports(rng):
        w.add(line)
    w.add("")
    snippets = rng.sample(CUDA_SNIPPETS, rng.randint(2, 6))
    if rng.random() < 0.3:
        snippets.insert(0, _s_device_setup)
    if c.hf:
        snippets.append(_s_hf)
    if c.triton:
        snippets.append(_s_triton)
    if c.flash:
        snippets.append(_s_flash)
    rng.shuffle(snippets)
    size = 0
    plain_budget = max(0, target - 3000)
    for snip in snippets:
        w.add("")
        w.add("")
        w.maybe_comment()
        if snip in (_s_device_setup, _s_cudnn, _s_compile, _s_misc_runtime) and rng.random() < 0.4:
            # nest module-level statements in a function, sometimes under an `if` or `with`
            w.add(f"def {_name(rng)}(model, args, device, dtype, x=None):")
            w.level += 1
            if rng.random() < 0.5:
                w.add("if args is not None:")
                w.level += 1
            snip(w, rng, c)
            w.add("return model")
            w.level = 0
        else:
            snip(w, rng, c)
        while size < plain_budget / len(snippets) * (snippets.index(snip) + 1):
            w.add("")
            w.add("")
            before = len(w.lines)
            rng.choice(PLAIN)(w, rng, c.t)
            size += sum(len(text) + 4 * lvl + 1 for lvl, text in w.lines[before:])
    if rng.random() < 0.5:
        w.add("")
        w.add("")
        _s_main(w, rng, c)
    return w


def _encode(w: _Writer, rng: random.Random) -> bytes:
    unit = "\t" if rng.random() < 0.08 else rng.choice(["    "] * 9 + ["  "])
    text = w.render(unit)
    latin1 = rng.random() < 0.05
    header = []
    if rng.random() < 0.1:
        header.append("#!/usr/bin/env python3")
    if latin1:
        header.append(rng.choice(["# -*- coding: latin-1 -*-", "# coding: iso-8859-1",
                                  "# vim: set fileencoding=latin-1 :"]))
        header.append(f"# Author: {rng.choice(LATIN1_WORDS)} <dev@example.org>")
    elif rng.random() < 0.05:
        header.append("# -*- coding: utf-8 -*-")
    if rng.random() < 0.4:
        header.append(f"# Copyright (c) {rng.randint(2017, 2025)} The Authors. All rights reserved.")
    if header:
        text = "\n".join(header) + "\n" + text
    if latin1 or rng.random() < 0.05:
        text += f"\n\nGREETING = \"{rng.choice(LATIN1_WORDS)}\"  # non-ASCII on purpose"
    text = text.rstrip("\n")
    if rng.random() > 0.1:  # 10% with no final newline
        text += "\n"
    data = text.encode("latin-1" if latin1 else "utf-8")
    r = rng.random()
    if r < 0.2:
        data = data.replace(b"\n", b"\r\n")
    elif r < 0.23:  # mixed endings: CRLF in the first half only
        half = len(data) // 2
        cut = data.rfind(b"\n", 0, half) + 1
        data = data[:cut].replace(b"\n", b"\r\n") + data[cut:]
    if not latin1 and rng.random() < 0.05:
        data = b"\xef\xbb\xbf" + data
    return data


DIRS = ["", "models", "models/layers", "data", "scripts", "train", "utils", "examples/vision",
        "examples/nlp", "inference", "tools"]


def generate_corpus(directory: Path, n_files: int, seed: int = 0,
                    target_bytes: int | None = None) -> list[Path]:
    """Write ``n_files`` files under ``directory`` (about ``target_bytes`` in all, if given)."""
    directory = Path(directory)
    rng = random.Random(seed)
    mean = (target_bytes / n_files) if target_bytes else 9000.0
    paths: list[Path] = []
    for i in range(n_files):
        frng = random.Random(rng.getrandbits(64))
        target = int(max(600.0, min(mean * 6, frng.lognormvariate(0, 0.7) * mean * 0.8)))
        r = frng.random()
        if r < 0.4:
            w = _cuda_file(frng, target)
        else:
            w, _ = _plain_file(frng, pure=r < 0.6, target=target)
        data = _encode(w, frng)
        sub = DIRS[frng.randrange(len(DIRS))]
        name = f"{frng.choice(ADJ)}_{frng.choice(NOUNS)}_{i:05d}.py"
        path = directory / f"proj{i % 7}" / sub / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        paths.append(path)
    return sorted(paths)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("n_files", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mb", type=float, default=None, help="about this many MB in all")
    ns = parser.parse_args()
    out = generate_corpus(ns.directory, ns.n_files, ns.seed,
                          int(ns.mb * 1_000_000) if ns.mb else None)
    print(f"{len(out)} files, {sum(p.stat().st_size for p in out) / 1e6:.1f} MB in {ns.directory}")
