"""Random-weight replicas of the rubric judge's default models in the hub cache layout.

* ``Qwen/Qwen2.5-0.5B-Instruct``: its real ``config.json`` narrowed (hidden 64, 2 layers; the real
  151,936-entry vocabulary, tied embeddings), a byte-level BPE ``tokenizer.json`` with Qwen2's
  pre-tokenizer (every digit its own token) and its special tokens at their real ids
  (``<|endoftext|>`` 151643, ``<|im_start|>`` 151644, ``<|im_end|>`` 151645), and the
  ``tokenizer_config.json`` chat template of Qwen2.5 (its branch without tools);
* ``HuggingFaceTB/SmolVLM-256M-Instruct``: Idefics3's configuration (a Llama text model and a
  SigLIP-style vision encoder, 512-pixel images, scale factor 4: 64 tokens an image) narrowed, the
  ``Idefics3ImageProcessor`` and ``Idefics3Processor`` files as ``save_pretrained`` writes them,
  and a byte-level BPE tokenizer with the image tokens and SmolVLM's chat template.

Token ids of ordinary words are not the real ones; the formats, classes and special ids are.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from real_layout import _safetensors_bytes, put_hub_repo

QWEN_REPO = "Qwen/Qwen2.5-0.5B-Instruct"
SMOLVLM_REPO = "HuggingFaceTB/SmolVLM-256M-Instruct"

#: Qwen2.5-0.5B-Instruct's config.json, narrowed (896 -> 64 wide, 24 -> 2 layers).
QWEN_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "hidden_act": "silu",
    "hidden_size": 64,
    "initializer_range": 0.02,
    "intermediate_size": 128,
    "max_position_embeddings": 32768,
    "max_window_layers": 2,
    "model_type": "qwen2",
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 32768,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 151936,
}
#: Qwen2.5's chat template, the branch without tools.
QWEN_CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}{%- if (message.role == 'user') or (message.role == 'system' and not loop.first) "
    "or (message.role == 'assistant') %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
_QWEN_PATTERN = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"


def _corpus() -> list[str]:
    from conftest import SAMPLE

    lines = []
    for line in SAMPLE.read_text().splitlines():
        lines.extend(json.loads(line).get("sentences", []))
    rubric = Path(__file__).resolve().parent.parent / "vst_core" / "metrics" / "judge" / "rubric_v1.json"
    lines.extend(rubric.read_text().splitlines())
    return lines * 3


def bpe_tokenizer(specials: dict[str, int], size: int, extra_specials: tuple[str, ...] = ()) -> str:
    """A byte-level BPE tokenizer.json (Qwen2's split pattern) trained on the sample and the rubric,
    its vocabulary filled up to ``size`` and ``specials`` added at their ids (in increasing order
    from ``size``); ``extra_specials`` follow them."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_QWEN_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1200, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_corpus(), trainer)
    data = json.loads(tok.to_str())
    vocab: dict[str, int] = data["model"]["vocab"]
    filler = 0
    while len(vocab) < size:
        vocab[f"<|filler_{filler}|>"] = len(vocab)
        filler += 1
    added = []
    ids = dict(specials)
    for name in extra_specials:
        ids[name] = max(ids.values(), default=size - 1) + 1
    for name, i in sorted(ids.items(), key=lambda kv: kv[1]):
        added.append(
            {
                "id": i,
                "content": name,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
        )
    data["added_tokens"] = added
    return json.dumps(data)


def build_qwen_judge(hf_home: Path) -> Path:
    """Qwen/Qwen2.5-0.5B-Instruct: narrowed Qwen2ForCausalLM, random weights (tied lm_head not stored)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(11)
    config = Qwen2Config(**{k: v for k, v in QWEN_CONFIG.items() if k not in ("architectures", "torch_dtype")})
    model = Qwen2ForCausalLM(config)
    state = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}
    specials = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645}
    tokenizer_config = {
        "add_prefix_space": False,
        "bos_token": None,
        "chat_template": QWEN_CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 131072,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }
    generation = {"bos_token_id": 151643, "do_sample": True, "eos_token_id": [151645, 151643], "pad_token_id": 151643}
    return put_hub_repo(
        hf_home,
        QWEN_REPO,
        {
            "config.json": json.dumps(QWEN_CONFIG, indent=2).encode(),
            "generation_config.json": json.dumps(generation, indent=2).encode(),
            "model.safetensors": _safetensors_bytes(state),
            "tokenizer.json": bpe_tokenizer(specials, 151643).encode(),
            "tokenizer_config.json": json.dumps(tokenizer_config, indent=2).encode(),
        },
    )


SMOLVLM_CHAT_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}"
    "{% if message['content'][0]['type'] == 'image' %}{{':'}}{% else %}{{': '}}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{line['text']}}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


def build_smolvlm(hf_home: Path, work: Path) -> Path:
    """HuggingFaceTB/SmolVLM-256M-Instruct: Idefics3 (Llama text model, SigLIP-style vision
    encoder), narrowed, random weights; its processor files as ``save_pretrained`` writes them."""
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessor,
        Idefics3Processor,
        PreTrainedTokenizerFast,
    )

    size = 49152
    specials = {"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2}
    extra = ("<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>") + tuple(
        f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)
    )
    raw = json.loads(bpe_tokenizer({}, size, ()))
    # SmolVLM's first ids are its special tokens; the filler and learned pieces follow
    vocab = raw["model"]["vocab"]
    shifted = {k: v + len(specials) for k, v in vocab.items()}
    raw["model"]["vocab"] = {**{k: v for k, v in specials.items()}, **shifted}
    next_id = max(raw["model"]["vocab"].values()) + 1
    raw["added_tokens"] = [
        {"id": i, "content": n, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
        for n, i in [*specials.items(), *((n, next_id + k) for k, n in enumerate(extra))]
    ]
    vocab_size = next_id + len(extra)
    tok_file = work / "tokenizer.json"
    tok_file.write_text(json.dumps(raw))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(tok_file),
        bos_token="<|im_start|>",
        eos_token="<end_of_utterance>",
        pad_token="<|im_end|>",
        unk_token="<|endoftext|>",
        additional_special_tokens=list(extra),
        model_max_length=8192,
    )
    image_processor = Idefics3ImageProcessor(
        do_resize=True,
        size={"longest_edge": 512},
        max_image_size={"longest_edge": 512},
        do_image_splitting=False,
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
        resample=1,
    )
    processor = Idefics3Processor(image_processor, tokenizer, image_seq_len=64, chat_template=SMOLVLM_CHAT_TEMPLATE)
    image_token_id = tokenizer.convert_tokens_to_ids("<image>")
    config = Idefics3Config(
        image_token_id=image_token_id,
        scale_factor=4,
        tie_word_embeddings=False,
        text_config={
            "model_type": "llama",
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "vocab_size": vocab_size,
            "max_position_embeddings": 8192,
            "rms_norm_eps": 1e-5,
            "rope_theta": 100000.0,
            "pad_token_id": tokenizer.pad_token_id,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
        },
        vision_config={
            "model_type": "idefics3_vision",
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": 512,
            "patch_size": 16,
        },
    )
    torch.manual_seed(12)
    model = Idefics3ForConditionalGeneration(config)
    folder = work / "smolvlm"
    processor.save_pretrained(folder)
    config.architectures = ["Idefics3ForConditionalGeneration"]
    config.save_pretrained(folder)
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    files["model.safetensors"] = _safetensors_bytes(model.state_dict())
    return put_hub_repo(hf_home, SMOLVLM_REPO, files)
