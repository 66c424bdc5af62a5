"""The rubric judge's models: an open-weight chat model read for its next-token probabilities.

Two kinds, both loaded by their real Hugging Face names from the local cache (or a folder):

* text only, default ``Qwen/Qwen2.5-0.5B-Instruct`` (:data:`.defaults.JUDGE_MODEL`): the
  smallest instruction-tuned model of a current open family (0.5 B parameters, about 1 GB in bf16,
  2 GB in fp32, Apache-2.0) with a chat template and single-token digits (its tokenizer splits every
  digit), so the rating tokens "1".."5" are one token each and it runs on a laptop CPU;
* vision-language, default ``HuggingFaceTB/SmolVLM-256M-Instruct`` (:data:`.defaults.JUDGE_VLM`):
  Idefics3's architecture, which transformers ships (``Idefics3ForConditionalGeneration``), 256 M
  parameters, a SigLIP encoder whose 512-pixel image costs 64 tokens once image splitting is off,
  so five images add about 330 tokens to a prompt; Apache-2.0.

:meth:`JudgeModel.logprobs` renders each :class:`~vst_core.metrics.judge.template.JudgePrompt` with the
model's chat template (system and user turns, the generation prompt, then the answer prefix),
runs batches of them left-padded (position ids from the attention mask, so a prompt's numbers do
not depend on its batch neighbours' lengths), keeps only the last position's logits and returns
the full-vocabulary log-probabilities of the answer tokens. fp32 on the CPU, bf16 (fp16 without
bf16 support) on CUDA.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vst_core.metrics.judge.defaults import JUDGE_MODEL, JUDGE_VLM
from vst_core.metrics.judge.seam import JudgeAnswers
from vst_core.metrics.judge.template import JudgePrompt
from vst_core.models.device import resolve_device
from vst_core.models.folders import load_hf
from vst_core.models.hub import ModelLoadError, hf_weights_id, option

#: Where to get the weights, for the messages of a missing model.
WHERE = f"run `vst fetch-models --judge` on a connected machine (same cache), or pass a local folder with {option('judge_model', 'DIR')}"


class JudgeModel:
    """A chat model (and, for a vision-language one, its processor) that scores rubric prompts.

    ``calls`` counts model forward passes (a cache test reads it); ``signature`` is
    ``name@weights digest``."""

    def __init__(
        self,
        name: str,
        tokenizer: Any,
        model: Any,
        *,
        processor: Any = None,
        device: str = "auto",
        batch_size: int = 8,
        signature: str | None = None,
    ) -> None:
        import torch

        self.name = name
        self.tokenizer = tokenizer
        self.processor = processor
        self.device = resolve_device(device)
        self.model = model.to(self.device).eval()
        self.batch_size = max(1, batch_size)
        self.signature = signature or hf_weights_id(name)
        self.calls = 0
        self.failures = 0  # a local model answers every prompt or raises
        self._torch = torch
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token

    @property
    def vision(self) -> bool:
        return self.processor is not None

    def token_ids(self, labels: Sequence[str]) -> list[int]:
        """The id of each answer label; each must be exactly one token of this tokenizer."""
        ids = []
        for label in labels:
            found = self.tokenizer.encode(label, add_special_tokens=False)
            if len(found) != 1:
                raise ModelLoadError(
                    f"the judge's tokenizer ({self.name}) splits the answer {label!r} into {len(found)} tokens; "
                    "G-Eval's rule needs one token per rating"
                )
            ids.append(int(found[0]))
        return ids

    def render(self, prompt: JudgePrompt, images: bool) -> str:
        """The prompt as the model reads it: its chat template with the generation prompt, then the
        answer prefix (system and user text in two blocks when the tokenizer has no template)."""
        if self.vision:
            content: list[dict[str, str]] = [{"type": "image"} for _ in prompt.images] if images else []
            content.append({"type": "text", "text": prompt.user})
            messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
            if prompt.system:
                messages.insert(0, {"role": "system", "content": [{"type": "text", "text": prompt.system}]})
            text = self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        elif getattr(self.tokenizer, "chat_template", None):
            plain = [{"role": "user", "content": prompt.user}]
            if prompt.system:
                plain.insert(0, {"role": "system", "content": prompt.system})
            text = self.tokenizer.apply_chat_template(plain, add_generation_prompt=True, tokenize=False)
        else:
            text = (f"{prompt.system}\n\n" if prompt.system else "") + f"{prompt.user}\n\n"
        return str(text) + prompt.prefix

    def _inputs(self, prompts: Sequence[JudgePrompt], root: Path | None, images: bool) -> dict[str, Any]:
        texts = [self.render(p, images) for p in prompts]
        if self.vision and images and any(p.images for p in prompts):
            from PIL import Image

            pictures = []
            for p in prompts:
                row = []
                for ref in p.images:
                    with Image.open((root or Path(".")) / ref) as im:
                        row.append(im.convert("RGB"))
                pictures.append(row)
            batch = self.processor(text=texts, images=pictures, return_tensors="pt", padding=True)
        else:
            batch = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        batch = {k: v.to(self.device) for k, v in dict(batch).items() if hasattr(v, "to")}
        if "pixel_values" in batch:
            batch["pixel_values"] = batch["pixel_values"].to(self.model.dtype)
        mask = batch["attention_mask"]
        batch["position_ids"] = (mask.long().cumsum(-1) - 1).clamp(min=0)
        return batch

    def logprobs(
        self, prompts: Sequence[JudgePrompt], labels: Sequence[str], *, root: Path | None = None, images: bool = False
    ) -> np.ndarray:
        """Full-vocabulary next-token log-probabilities of each label after each prompt, shape
        ``(len(prompts), len(labels))``; ``images``: show each prompt's images (vision models)."""
        ids = self.token_ids(labels)
        out = np.zeros((len(prompts), len(ids)), dtype=np.float64)
        order = sorted(range(len(prompts)), key=lambda i: (len(prompts[i].user), len(prompts[i].images)))
        torch = self._torch
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            batch = self._inputs([prompts[i] for i in chunk], root, images)
            with torch.inference_mode():
                logits = self.model(**batch, logits_to_keep=1, use_cache=False).logits[:, -1, :].float()
            self.calls += 1
            picked = torch.log_softmax(logits, dim=-1)[:, ids].cpu().numpy()
            for row, i in enumerate(chunk):
                out[i] = picked[row]
        return out

    def answers(
        self, prompts: Sequence[JudgePrompt], labels: Sequence[str], *, root: Path | None = None, images: bool = False
    ) -> JudgeAnswers:
        """:meth:`logprobs` as :class:`~vst_core.metrics.judge.seam.JudgeAnswers` (a local model answers
        every prompt or raises)."""
        return JudgeAnswers(self.logprobs(prompts, labels, root=root, images=images), (None,) * len(prompts))

    def generate(
        self, prompts: Sequence[JudgePrompt], *, root: Path | None = None, images: bool = False, max_new_tokens: int = 80
    ) -> list[str]:
        """Greedy continuations (deterministic): the rationale shown beside the scores."""
        texts: list[str] = []
        torch = self._torch
        for start in range(0, len(prompts), self.batch_size):
            chunk = list(prompts[start : start + self.batch_size])
            batch = self._inputs(chunk, root, images)
            batch.pop("position_ids")
            with torch.inference_mode():
                done = self.model.generate(
                    **batch, do_sample=False, max_new_tokens=max_new_tokens, pad_token_id=self.tokenizer.pad_token_id
                )
            self.calls += 1
            width = batch["input_ids"].shape[1]
            texts.extend(self.tokenizer.decode(row[width:], skip_special_tokens=True).strip() for row in done)
        return texts


def _dtype(device: str) -> Any:
    import torch

    if device != "cuda":
        return torch.float32
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def load_judge(name: str = JUDGE_MODEL, *, vision: bool = False, device: str = "auto", batch_size: int = 8) -> JudgeModel:
    """The judge by its hub name (local cache first) or a folder; a vision-language model when
    ``vision``. Missing weights raise :class:`~vst_core.models.hub.WeightsUnavailableError`."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoProcessor, AutoTokenizer

    from vst_core.models.folders import quiet_transformers

    resolved = resolve_device(device)
    dtype = _dtype(resolved)
    what = "judge vision-language model" if vision else "judge model"
    extra = f" ({option('judge_model')} / {option('judge_vlm')}); {WHERE}"
    with quiet_transformers():
        if vision:
            processor = load_hf(name, AutoProcessor.from_pretrained, f"{what} processor", extra)
            model = load_hf(
                name, lambda n, **kw: AutoModelForImageTextToText.from_pretrained(n, dtype=dtype, **kw), what, extra, weights=True
            )
            tokenizer = processor.tokenizer
        else:
            processor = None
            tokenizer = load_hf(name, AutoTokenizer.from_pretrained, f"{what} tokenizer", extra)
            model = load_hf(
                name, lambda n, **kw: AutoModelForCausalLM.from_pretrained(n, dtype=dtype, **kw), what, extra, weights=True
            )
    return JudgeModel(name, tokenizer, model, processor=processor, device=resolved, batch_size=batch_size)


def judge_weights_id(name: str) -> str:
    """``name@digest`` of the judge's weights file, or ``name@not-downloaded``."""
    return hf_weights_id(name)


__all__ = ["JUDGE_MODEL", "JUDGE_VLM", "WHERE", "JudgeModel", "judge_weights_id", "load_judge"]
