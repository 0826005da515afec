"""Every command's bad inputs end in one typed line on stderr, never a traceback."""

import pytest

from sluice.cli import main

pytestmark = pytest.mark.unit


def _run(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err
    return code, err


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "plain-file"
    path.write_text("not a directory")
    return path


@pytest.mark.parametrize("argv", [
    ["dump", "{missing}"],
    ["dump", "{dir}"],
    ["dump", "--events", "{missing}"],
    ["dump", "--format", "none", "{dir}"],
    ["dump", "{file}"],
    ["run", "--source", "mysql://u@127.0.0.1:1/", "--lake", "{file}", "--trigger", "once"],
    ["run", "--source", "mysql://u@127.0.0.1:1/", "--lake", "{dir}", "--trigger", "soon"],
    ["run", "--source", "mysql://u@127.0.0.1:1/", "--lake", "{dir}", "--snapshot", "sometimes"],
    ["run", "--source", "ftp://nowhere/", "--lake", "{dir}"],
    ["run", "--config", "{missing}"],
    ["run", "--config", "{file}"],
    ["tail", "mysql://u@127.0.0.1:1/", "--from", "binlog.000001:x"],
    ["tail", "mysql://u@127.0.0.1:1/", "--checkpoint", "{file}/sub", "--from-now"],
    ["verify", "--source", "mysql://u@127.0.0.1:1/", "--lake", "{missing}"],
])
def test_bad_input_is_one_line(capsys, tmp_path, a_file, argv):
    subst = {"missing": str(tmp_path / "no" / "such"), "dir": str(tmp_path), "file": str(a_file)}
    try:
        code, err = _run(capsys, [a.format(**subst) for a in argv])
    except SystemExit as exc:  # argparse's own usage errors: exit 2 with a usage line
        code, err = exc.code, capsys.readouterr().err
    assert code in (1, 2), err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("usage:")
             and not line.startswith(" ")]
    assert lines and lines[-1].startswith("sluice"), err
    assert "internal error" not in err
