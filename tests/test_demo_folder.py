"""`quickstart`'s demo history where ~/.cache cannot be used: it goes to the temporary folder,
where anyone can make a name first. A link or a folder others can write, planted at the name
it would use, never gets the demo's files: it gets a private folder of its own."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

NAMES = ("prima-memory-demo", f"prima-memory-demo-{os.getuid()}")  # (before, and now)


def _quickstart(env, tmp: Path) -> dict:
    (env.home / ".cache").write_text("not a folder")  # ~/.cache unusable
    return env.json("quickstart", env={"TMPDIR": str(tmp), "XDG_CACHE_HOME": ""})


def _demo_root(data: dict) -> Path:
    ws = Path(data["status"]["workspace"])  # <root>/Demo Project
    assert ws.name == "Demo Project"
    return ws.parent


@pytest.mark.parametrize("planted", ["link", "open folder"])
def test_a_name_planted_in_the_temporary_folder_gets_nothing(env, tmp_path, planted):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)  # (as /tmp is)
    target = tmp_path / "someone's folder"
    target.mkdir()
    for name in NAMES:
        if planted == "link":
            (tmp / name).symlink_to(target)
        else:
            (tmp / name).mkdir(mode=0o777)
            (tmp / name).chmod(0o777)  # (whatever the umask)
    data = _quickstart(env, tmp)
    assert list(target.iterdir()) == []  # nothing written through the link
    for name in NAMES:
        if planted == "link":
            assert (tmp / name).is_symlink()
        else:
            assert list((tmp / name).iterdir()) == []
    assert data["index"]["sessions_updated"] > 0 and data["search"]["results"], data
    root = _demo_root(data)
    assert root.parent == tmp and root.name not in NAMES
    st = os.lstat(root)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def test_its_own_private_folder_is_used_again(env, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    first = _demo_root(_quickstart(env, tmp))
    again = _quickstart(env, tmp)
    assert _demo_root(again) == first == tmp / NAMES[1]
    assert again["index"]["sessions_updated"] == 0  # (indexed the first time)
    assert stat.S_IMODE(os.lstat(first).st_mode) == 0o700
