"""Safe, atomic persistence helpers: JSON, safetensors, pickle detection and integrity manifests.

Nothing in setfit_lite ever writes a pickle, nor reads one unless a caller passes ``allow_pickle=True``.
This package has no other setfit_lite imports, so any module may use it: write folders with
`atomic_directory`, JSON with `save_json` and digests with `sha256_file` rather than anew.
torch is imported only to save or load tensors.

- `atomic`: files and folders that appear complete or not at all, one writer of a folder at a time;
- `guard`: `check_output_path`, which every writer calls so that it never writes over what it reads,
  and `refuse_symlinked_folders`, so that a save never writes or removes through a symlinked sub-folder;
- `files`: JSON and safetensors files;
- `pickles`: finding and refusing pickle files;
- `remote_code`: `refuse_remote_code`, so that loading a folder never runs code it names (module types outside
  sentence_transformers, a config's ``auto_map``) unless ``trust_remote_code``;
- `manifest`: ``manifest.json`` of sha256 digests, written on save and verified on load (all but the model card,
  ``README.md``: documentation the user may edit); `owned_files` (only a manifest setfit_lite wrote owns files a
  writer may remove or replace; one it lists that changed since is the user's);
- `update`: saving into an existing folder (the user's other files stay), safe against a kill (a save journal
  that names anything but what a save of setfit_lite started is refused, never completed), and
  `read_consistently`, through which the model loaders (torch, ONNX, static) read a folder whole, never half
  saved over;
- `validate`: load-time checks of version fields, counts, shapes and indices, naming the file and the field.
"""

from __future__ import annotations

from .atomic import atomic_directory, atomic_write_bytes, atomic_write_text, path_lock
from .files import load_json, load_tensors, save_json, save_tensors
from .guard import check_output_path, refuse_symlinked_folders
from .manifest import MANIFEST_NAME, owned_files, owns_folder, sha256_file, verify_manifest, write_manifest
from .pickles import PICKLE_SUFFIXES, find_pickle_files, refuse_pickles
from .remote_code import refuse_remote_code
from .update import (
    MODEL_FILE_NAMES,
    SAVE_JOURNAL_NAME,
    atomic_update_directory,
    check_can_update,
    model_file_paths,
    read_consistently,
    recover_interrupted_save,
)
from .validate import ModelFormatError

__all__ = [
    "MANIFEST_NAME",
    "MODEL_FILE_NAMES",
    "ModelFormatError",
    "PICKLE_SUFFIXES",
    "SAVE_JOURNAL_NAME",
    "atomic_directory",
    "atomic_update_directory",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_can_update",
    "check_output_path",
    "find_pickle_files",
    "load_json",
    "load_tensors",
    "model_file_paths",
    "owned_files",
    "owns_folder",
    "path_lock",
    "read_consistently",
    "recover_interrupted_save",
    "refuse_pickles",
    "refuse_remote_code",
    "refuse_symlinked_folders",
    "save_json",
    "save_tensors",
    "sha256_file",
    "verify_manifest",
    "write_manifest",
]
