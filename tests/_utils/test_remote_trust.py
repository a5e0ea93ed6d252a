"""The record of hf_dumpembed's remote code: the installed files and every released version are ours by sha256."""

from __future__ import annotations

from hf_dumpembed._utils.hashing import sha256_file
from hf_dumpembed._utils.remote_trust import REMOTE_FILES, known_remote_hashes
from hf_dumpembed.model.folder_schema import folder_code_may_run, folder_deviations
from tests.support.card_fixtures import copy_model


def test_a_package_made_folder_is_ours(bert_dump_model):
    """A folder `build` wrote carries the package's own files byte for byte: nothing foreign, nothing refused."""
    assert folder_deviations(bert_dump_model) == []
    folder_code_may_run(bert_dump_model)
    known = known_remote_hashes()
    for name in REMOTE_FILES:
        assert sha256_file(bert_dump_model / name) in known[name]


def test_a_released_version_is_recognised_by_its_recorded_hash(bert_dump_model, tmp_path, monkeypatch):
    """An older release's file (recorded by sha256) is ours even after the installed copy changed."""
    from hf_dumpembed._utils import remote_trust

    folder = copy_model(bert_dump_model, tmp_path / "model")
    released = {name: frozenset({sha256_file(folder / name)}) for name in REMOTE_FILES[1:]}
    installed = tmp_path / "installed"
    installed.mkdir()
    for name in REMOTE_FILES:
        (installed / name).write_text((folder / name).read_text() + "\n# a newer version\n")
    monkeypatch.setattr(remote_trust, "REMOTE_DIR", installed)
    monkeypatch.setattr(remote_trust, "RELEASED_REMOTE_SETS", ({**released, REMOTE_FILES[0]: frozenset()},))
    digest = sha256_file(folder / REMOTE_FILES[0])[:12]
    assert [str(item) for item in folder_deviations(folder)] == [
        f"configuration_dumpembed.py: differs from every version of hf_dumpembed's configuration_dumpembed.py "
        f"(sha256 {digest}…)"]


TWO_FILES = ("configuration_dumpembed.py", "modeling_dumpembed.py")


def _two_file_release(folder, monkeypatch):
    """``folder`` as a two-file release wrote it (no prefix cache file; its own version of both files, recorded as
    released in the two-file set); the installed version stays the three-file one."""
    from hf_dumpembed._utils import remote_trust

    (folder / "prefix_cache_dumpembed.py").unlink()
    for name in TWO_FILES:
        (folder / name).write_text((folder / name).read_text() + "\n# as that release had it\n")
    two = {name: frozenset({sha256_file(folder / name)}) for name in TWO_FILES}
    three = {name: frozenset() for name in REMOTE_FILES}
    monkeypatch.setattr(remote_trust, "RELEASED_REMOTE_SETS", (two, three))
    return folder


def test_a_folder_of_a_two_file_release_keeps_loading(bert_dump_model, tmp_path, monkeypatch):
    """Folders built before the prefix cache had its own file carry two remote files: that set is ours too."""
    folder = _two_file_release(copy_model(bert_dump_model, tmp_path / "old"), monkeypatch)
    assert folder_deviations(folder) == []
    assert folder_deviations(bert_dump_model) == []  # and the installed three-file set


def test_remote_files_of_different_sets_are_refused(bert_dump_model, tmp_path, monkeypatch):
    """Fails with a per-file check alone: each file is a known version, but no release wrote them together (a
    modeling file without the prefix cache it imports; a prefix cache beside a two-file release's files)."""
    new = copy_model(bert_dump_model, tmp_path / "new")
    (new / "prefix_cache_dumpembed.py").unlink()
    assert [str(item) for item in folder_deviations(new)] == ["prefix_cache_dumpembed.py: is missing"]
    old = _two_file_release(copy_model(bert_dump_model, tmp_path / "old"), monkeypatch)
    (old / "prefix_cache_dumpembed.py").write_bytes((bert_dump_model / "prefix_cache_dumpembed.py").read_bytes())
    assert [str(item) for item in folder_deviations(old)] == [
        "prefix_cache_dumpembed.py: is not one of the remote files released with the folder's other ones "
        "(hf_dumpembed never wrote them together); rebuild the folder with `hf-dumpembed build`"]
    (old / "prefix_cache_dumpembed.py").unlink()
    (old / "modeling_dumpembed.py").write_bytes((bert_dump_model / "modeling_dumpembed.py").read_bytes())
    assert [str(item) for item in folder_deviations(old)] == [
        "modeling_dumpembed.py: is a version of another release than the folder's other remote files (hf_dumpembed "
        "never wrote them together); rebuild the folder with `hf-dumpembed build`"]


def test_the_record_keeps_the_last_two_file_version():
    """The two remote files as main had them just before the prefix cache moved out (2e24be2) stay recorded."""
    from hf_dumpembed._utils.remote_trust import RELEASED_REMOTE_SETS

    (two,) = [files for files in RELEASED_REMOTE_SETS if set(files) == set(TWO_FILES)]
    assert "474f9b2d5c167dcd42b55a05ca770c09fe43e2800ec5a5bbb7dbbe4eb103d45d" in two["configuration_dumpembed.py"]
    assert "908911595b18d16258babe2843b198c60e98d16cb0d61b152c074b7edc5c16b3" in two["modeling_dumpembed.py"]


def test_the_installed_files_are_ours_together_not_beside_an_older_release(bert_dump_model, tmp_path, monkeypatch):
    """Fails with the installed hashes added to an older set of the same names: the installed modeling and
    configuration files beside an older release's prefix cache (which they were never written with) passed."""
    from hf_dumpembed._utils import remote_trust

    folder = copy_model(bert_dump_model, tmp_path / "mixed")
    (folder / "prefix_cache_dumpembed.py").write_text("# an older release's prefix cache\n")
    older = {name: frozenset({"0" * 64}) for name in REMOTE_FILES}
    older["prefix_cache_dumpembed.py"] = frozenset({sha256_file(folder / "prefix_cache_dumpembed.py")})
    monkeypatch.setattr(remote_trust, "RELEASED_REMOTE_SETS", (older,))
    assert [str(item) for item in folder_deviations(folder)] == [
        "prefix_cache_dumpembed.py: is a version of another release than the folder's other remote files "
        "(hf_dumpembed never wrote them together); rebuild the folder with `hf-dumpembed build`"]
    assert folder_deviations(bert_dump_model) == []  # the installed files, together
