"""NRN304: Hugging Face `model.generate(...)` with the dynamic KV cache -> `cache_implementation="static"`."""

from __future__ import annotations

import libcst as cst

from neuronize.transforms._helpers import per_target
from neuronize.analysis.context import FileContext
from neuronize.analysis.syntax import is_false_or_none
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.calls import keyword, with_keyword
from neuronize.transforms._helpers.literals import make_string
from neuronize.transforms._helpers.messages import short

#: keywords only Hugging Face's `generate` takes (a custom `generate` rarely does)
HF_KEYWORDS = frozenset({
    "input_ids", "attention_mask", "pad_token_id", "eos_token_id", "bos_token_id", "num_beams",
    "return_dict_in_generate", "output_scores", "output_logits", "streamer", "num_return_sequences",
    "repetition_penalty", "no_repeat_ngram_size", "min_new_tokens", "logits_processor",
    "stopping_criteria", "prefix_allowed_tokens_fn", "assistant_model", "inputs",
})
#: keywords a custom `generate` shares with Hugging Face's
COMMON_KEYWORDS = frozenset({"max_new_tokens", "max_length", "do_sample", "temperature", "top_k", "top_p"})
#: arguments that already decide the cache
CACHE_DECIDED = frozenset({"cache_implementation", "past_key_values", "generation_config"})
#: receivers whose `.generate(...)` is not a model's
NOT_MODELS = ("token", "random", "rng", "generator", "processor", "faker", "np.", "numpy", "client", "engine",
              "server", "vllm")
#: keywords of other libraries' `generate` (vLLM's `LLM.generate(prompts, sampling_params)`)
OTHER_KEYWORDS = frozenset({"sampling_params", "use_tqdm", "lora_request", "prompt_token_ids"})
#: `**mapping` names that hold tokenizer output, not generation settings
INPUT_MAPPINGS = ("input", "batch", "enc", "token", "feature", "prompt")


class GenerateStaticCache(Transform):
    """Finds Hugging Face `model.generate(...)` calls that use the default dynamic KV cache.

    What it does:
        Adds `cache_implementation="static"` to Hugging Face `.generate(...)` calls: the receiver
        was built by transformers (`AutoModelForCausalLM.from_pretrained(...)`, `pipeline(...)`),
        or the file imports `transformers` and the call passes Hugging Face generation keywords
        or a tokenizer's output (`**inputs`) and nothing else (a project's own `generate` with
        keywords of its own, such as `cg=True`, would raise TypeError: reported instead), unless the call already passes `cache_implementation=`,
        `past_key_values=`, `generation_config=` or `use_cache=False`, or the file sets
        `cache_implementation` elsewhere (`model.generation_config.cache_implementation = ...`).
        Receivers that are not models (`tokenizer`, `np.random`, a `Generator`, an API `client`,
        vLLM's `LLM` and its `sampling_params=`) are skipped.
        Reported, not changed: calls whose settings come from `**gen_kwargs` (the mapping may already
        set the cache), calls in a file that loads a model with `trust_remote_code=True` (its
        modeling code comes with the checkpoint and may not support a static cache), and calls
        with Hugging Face-only keywords (`input_ids=`, `attention_mask=`, `num_beams=` ...) in
        files that do not import `transformers`. Calls that look like a custom
        `generate` (nanoGPT's `model.generate(idx, max_new_tokens)`) in such files are left alone.

    Why on TorchNeuron:
        Neuron compiles static shapes. A dynamic cache grows by one token per step, so each step
        would be a new shape; with a static cache transformers compiles the decoding forward once
        (transformers counts Neuron as auto-compile hardware), and the Neuron Hugging Face tutorial
        generates with `cache_implementation="static"` and a `CompileConfig`.

    Example:
        out = model.generate(**inputs, max_new_tokens=64)

    Use instead:
        out = model.generate(**inputs, max_new_tokens=64,
                             cache_implementation="static" if on_neuron() else None)

        The static cache only where the accelerator is Neuron: the CUDA box and the CPU keep the
        dynamic cache (`None` is transformers' default; the keyword check of releases older than
        the setting skips `None` values). `--target cpu` (a local check of the migration) passes
        `"static"` everywhere.

    Fix safety:
        Unsafe: the static cache is allocated up front for `max_length` / `max_new_tokens` tokens
        (more memory, and without them the model's default maximum length applies), and some
        architectures do not support it.

    Evidence:
        DOC: Hugging Face tutorial; 3P: auto-compile on Neuron (transformers PR #44757).
    """

    id = "NRN304"
    name = "generate-static-cache"
    safety = Safety.UNSAFE
    evidence = Evidence.DOC
    section = "compile"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/tutorials/tutorial-hf-inference-torch-compile.html",
        "https://github.com/huggingface/transformers/pull/44757",
    )
    tokens = (b".generate(",)
    needs = (("transformers", (4, 38)),)  # `cache_implementation=`, the static KV cache
    #: the same edit on every `--target` (it names no device)
    targets = per_target.ALL
    examples = (
        Example(
            "from transformers import AutoModelForCausalLM\n"
            "out = model.generate(**inputs, max_new_tokens=64)\n",
            "from transformers import AutoModelForCausalLM\n"
            "import torch\n\n"
            'out = model.generate(**inputs, max_new_tokens=64, cache_implementation="static" if hasattr(torch, '
            '"accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type '
            '== "neuron" else None)\n',
        ),
        Example(
            "from transformers import AutoModelForCausalLM\n"
            "out = model.generate(**inputs, max_new_tokens=64)\n",
            "from transformers import AutoModelForCausalLM\n"
            'out = model.generate(**inputs, max_new_tokens=64, cache_implementation="static")\n',
            target=per_target.CPU,
        ),
        Example("out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=32)\n"),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        # decided at the end of the file: a later `generation_config.cache_implementation = ...`
        self._pending: list[tuple[cst.Call, list[cst.CSTNode], bool]] = []
        self._cache_set_elsewhere = False
        #: names bound to what a transformers call built (`from_pretrained`, `pipeline`)
        self._hf_objects: set[str] = set()
        #: names also bound to something else (`model = MambaLMHeadModel(...)` in another branch)
        self._other_objects: set[str] = set()
        #: every assignment target, and whether a transformers call made its value
        self._assigned: list[tuple[cst.BaseAssignTargetExpression, bool]] = []
        #: a loader of the file runs modeling code that comes with the checkpoint (`trust_remote_code=True`)
        self._remote_code = False

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and node.keyword.value == "trust_remote_code" and not is_false_or_none(node.value):
            self._remote_code = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "generate":
            if any(a.keyword is not None and a.keyword.value == "cache_implementation" for a in node.args):
                self._cache_set_elsewhere = True  # GenerationConfig(cache_implementation=...)
            return
        if self.ctx.qualify(func) is not None:
            return  # a module's function, not a model's method
        receiver = (short(func.value, 200)).lower()
        if any(word in receiver for word in NOT_MODELS):
            return
        if not node.args:
            return
        names = {a.keyword.value for a in node.args if a.keyword is not None}
        if names & CACHE_DECIDED or names & OTHER_KEYWORDS:
            return
        if "llm" in receiver and self.ctx.names.imports_module("vllm"):
            return  # vLLM's `LLM.generate`
        use_cache = keyword(node, "use_cache")
        if use_cache is not None and not (isinstance(use_cache.value, cst.Name) and use_cache.value.value == "True"):
            return
        transformers = self.ctx.names.imports_module("transformers")
        if not transformers:
            stars = [a for a in node.args if a.star == "**"]
            hf_like = bool(names & HF_KEYWORDS) or any(self._input_mapping(a) for a in stars)
            if not hf_like:
                return
        hf_inputs = bool(names & HF_KEYWORDS) or any(self._input_mapping(a) for a in node.args)
        hf_only = hf_inputs and names <= HF_KEYWORDS | COMMON_KEYWORDS | {"use_cache"}
        self._pending.append((node, list(self.ctx.stack), transformers and hf_only))

    def visit_Assign(self, node: cst.Assign) -> None:
        made_by_transformers = isinstance(node.value, cst.Call) and (
            self.ctx.qualify(node.value.func) or "").startswith("transformers.")
        for target in node.targets:
            t = target.target
            if isinstance(t, cst.Attribute) and t.attr.value == "cache_implementation":
                self._cache_set_elsewhere = True
            self._assigned.append((t, made_by_transformers))

    def leave_Module(self, original_node: cst.Module) -> None:
        if self._cache_set_elsewhere or not self._pending:
            return
        for target, made_by_transformers in self._assigned:  # spelt only where a call needs them
            (self._hf_objects if made_by_transformers else self._other_objects).add(short(target, 200))
        saved = self.ctx.stack
        try:
            for call, stack, hf_only in self._pending:
                # report as if from the call's own place in the tree (nesting of fixes)
                self.ctx.stack = stack
                receiver = short(call.func.value, 200) if isinstance(call.func, cst.Attribute) else ""
                built_by_hf = receiver in self._hf_objects and receiver not in self._other_objects
                self._decide(call, hf_only or built_by_hf)
        finally:
            self.ctx.stack = saved

    def _decide(self, node: cst.Call, hugging_face: bool) -> None:
        """``hugging_face``: the receiver was built by transformers, or the file imports
        transformers and the call passes Hugging Face generation keywords only."""
        what = f"`{short(node.func, 50)}(...)`"
        settings = [a for a in node.args if a.star == "**" and not self._input_mapping(a)]
        if not hugging_face:
            self.report(node, f"{what} looks like Hugging Face generation: if it is, pass "
                        '`cache_implementation="static"` so Neuron compiles the decoding step once')
            return
        if self._remote_code:
            self.report(node, f"{what} generates with a model whose code comes with its checkpoint "
                        "(`trust_remote_code=True`), which may not support a static KV cache (transformers raises "
                        'for one that does not): where it does, pass `cache_implementation="static"` on Neuron, '
                        "which then compiles the decoding step once")
            return
        if settings:
            self.report(node, f"{what} takes settings from `{short(settings[0], 50)}`: unless they set the cache, "
                        'pass `cache_implementation="static"` so Neuron compiles the decoding step once')
            return
        limit = keyword(node, "max_new_tokens") or keyword(node, "max_length")
        note = "" if limit is not None else "; pass `max_new_tokens=` to size it"
        static = make_string("static")
        value, imports = per_target.neuron_only(self.ctx, static, cst.Name("None"))  # the others keep the dynamic cache
        where = " on Neuron" if value is not static else ""
        self.fix(node, with_keyword(node, "cache_implementation", value),
                 f'{what}: `cache_implementation="static"` added{where}: a fixed-size KV cache gives the decoding '
                 f"step one shape, so Neuron compiles it once; the cache is allocated up front for the full "
                 f"length{note}", imports=imports)

    @staticmethod
    def _input_mapping(arg: cst.Arg) -> bool:
        if arg.star != "**":
            return False
        name = short(arg.value, 200).lower()
        return any(word in name for word in INPUT_MAPPINGS)
