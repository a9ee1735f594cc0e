"""ops/install: the executables, shell completions and the man page, generated from the CLI's
command table, installed into a prefix and tried in real bash, zsh and fish and with man."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import _executable

ROOT = Path(__file__).resolve().parents[2]


def shell(name: str) -> str:
    found = shutil.which(name)
    if not found:
        pytest.fail(f"{name} is missing: ops/setup installs it (apt-get install {name})")
    return found


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("prefix")
    installed = subprocess.run([str(ROOT / "ops/install"), "--from", str(_executable("homepwner").parent), str(prefix)],
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "completions for bash, zsh and fish" in installed.stdout, installed.stdout
    return prefix


SERVICES = ("item-service", "image-service", "capture-worker", "thumbnail-worker")


def test_install_puts_the_executables_completions_and_man_page_in_the_prefix(prefix):
    # One executable: the four service names are links to it (issue 31, item 5).
    assert (prefix / "bin/homepwner").is_file() and not (prefix / "bin/homepwner").is_symlink()
    for name in SERVICES:
        assert (prefix / "bin" / name).is_symlink() and os.readlink(prefix / "bin" / name) == "homepwner", name
        assert os.access(prefix / "bin" / name, os.X_OK), name
    version = subprocess.run([str(prefix / "bin/homepwner"), "--version"], capture_output=True, text=True, timeout=30)
    assert version.returncode == 0 and version.stdout.startswith("homepwner "), version
    for path in ("share/bash-completion/completions/homepwner", "share/zsh/site-functions/_homepwner",
                 "share/fish/vendor_completions.d/homepwner.fish", "share/man/man1/homepwner.1"):
        assert (prefix / path).stat().st_size > 1000, path
    # Uninstalling removes every file it put.
    copy = prefix.parent / "again"
    assert subprocess.run([str(ROOT / "ops/install"), "--from", str(prefix / "bin"), str(copy)], capture_output=True, timeout=120).returncode == 0
    removed = subprocess.run([str(ROOT / "ops/install"), "--uninstall", str(copy)], capture_output=True, text=True, timeout=60)
    assert removed.returncode == 0, removed.stderr
    assert [p for p in copy.rglob("*") if p.is_file()] == []
    bad = subprocess.run([str(ROOT / "ops/install"), "--from", str(prefix / "nothing"), str(copy)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "is missing" in bad.stderr, bad.stderr


def bash_complete(prefix, *words):
    script = (f"source {prefix}/share/bash-completion/completions/homepwner\n"
              f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}; _homepwner; "
              'printf "%s\\n" "${COMPREPLY[@]}"')
    done = subprocess.run([shell("bash"), "-c", script], capture_output=True, text=True, timeout=30, cwd=prefix)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completes_commands_subcommands_options_and_file_values(prefix):
    assert bash_complete(prefix, "homepwner", "it") == ["item", "item-service"]
    assert bash_complete(prefix, "homepwner", "thumbnail-worker", "--png-b") == ["--png-background"]
    assert bash_complete(prefix, "homepwner", "item", "photo", "") == ["add", "rm", "primary", "order", "role"]
    assert bash_complete(prefix, "homepwner", "backup", "--ke") == ["--key", "--keep-daily", "--keep-weekly"]
    assert bash_complete(prefix, "homepwner", "completions", "") == ["bash", "zsh", "fish"]
    # A path-valued option completes file names; another option's value, nothing.
    assert bash_complete(prefix, "homepwner", "backup", "--sign-key", "bi") == ["bin"]
    assert bash_complete(prefix, "homepwner", "item", "add", "--serial", "") == []


def zsh_complete(prefix, *words):
    # compadd, _describe and _files stand in for zsh's completion system, printing what they are given.
    script = f"""
compdef() {{ :; }}
compadd() {{ shift; print -r -- "$@"; }}
_describe() {{ local -a list; list=("${{(@P)4}}"); print -r -- ${{list%%:*}}; }}
_files() {{ print -r -- FILES; }}
source {prefix}/share/zsh/site-functions/_homepwner
words=({' '.join(repr(w) for w in words)}); CURRENT=${{#words}}
_homepwner
"""
    done = subprocess.run([shell("zsh"), "-f", "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_zsh_completes_commands_subcommands_options_and_file_values(prefix):
    assert "item" in zsh_complete(prefix, "homepwner", "it") and "backup" in zsh_complete(prefix, "homepwner", "")
    assert zsh_complete(prefix, "homepwner", "item", "photo", "") == ["add", "rm", "primary", "order", "role"]
    assert {"--keep-daily", "--keep-weekly", "--sign-key"} <= set(zsh_complete(prefix, "homepwner", "backup", "--ke"))
    assert zsh_complete(prefix, "homepwner", "backup", "--sign-key", "") == ["FILES"]
    assert zsh_complete(prefix, "homepwner", "item", "add", "--serial", "") == []


def test_fish_completes_commands_subcommands_options_and_file_values(prefix):
    def complete(line):
        done = subprocess.run([shell("fish"), "--no-config", "-c",
                               f"source {prefix}/share/fish/vendor_completions.d/homepwner.fish; complete -C{line!r}"],
                              capture_output=True, text=True, timeout=30, cwd=prefix)
        assert done.returncode == 0, done.stderr
        return [row.split("\t")[0] for row in done.stdout.splitlines()]
    assert complete("homepwner it") == ["item", "item-service"]
    assert complete("homepwner item photo ") == ["add", "order", "primary", "rm", "role"]
    assert complete("homepwner backup --keep-") == ["--keep-daily", "--keep-weekly"]
    assert complete("homepwner backup --sign-key bi") == ["bin/"]


def unroff(text: str) -> str:
    text = re.sub(r"\\\[u([0-9A-F]{4,})\]", lambda m: chr(int(m.group(1), 16)), text)
    return text.replace("\\-", "-").replace("\\e", "\\").removeprefix("\\&")


def test_the_man_page_renders_cleanly_and_lists_every_command_the_cli_dispatches(prefix):
    page = prefix / "share/man/man1/homepwner.1"
    checked = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(page)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and checked.stderr == "", checked.stderr
    rendered = subprocess.run(["man", "-l", str(page)], capture_output=True, text=True, timeout=60, env={**os.environ, "MANWIDTH": "100", "MAN_KEEP_FORMATTING": ""})
    assert rendered.returncode == 0 and "EXIT STATUS" in rendered.stdout and "HOMEPWNER_ITEM_RPC" in rendered.stdout, rendered.stderr
    roff = page.read_text().splitlines()
    cli = str(prefix / "bin/homepwner")
    listed = subprocess.run([cli, "--help"], capture_output=True, text=True, timeout=30).stdout
    commands = re.findall(r"^  (\S+)\s{2,}", listed.split("COMMANDS:")[1], re.M)
    assert len(commands) > 20 and "backup" in commands and "man" in commands, listed
    sections = {unroff(m.group(1)) for line in roff if (m := re.fullmatch(r'\.SS "homepwner (.+)"', line))}
    assert sections == set(commands), sections ^ set(commands)
    # Every path the page names answers 'homepwner PATH --help' with that page's summary: the
    # table the page and completions come from is what the CLI dispatches. A path that is also a
    # group (capture, with capture sources …) answers with the group's overview, naming each.
    named = []
    for index, line in enumerate(roff):
        if line.startswith(".B homepwner ") and roff[index - 1] == ".TP":
            named.append((unroff(line.removeprefix(".B homepwner ")).split(), unroff(roff[index + 1])))
        elif line.startswith('.SS "homepwner ') and roff[index + 2] == ".PP":
            named.append(([unroff(line.removeprefix('.SS "homepwner ').rstrip('"'))], unroff(roff[index + 3])))
    assert len(named) >= 65, named
    for path, summary in named:
        helped = subprocess.run([cli, *path, "--help"], capture_output=True, text=True, timeout=30)
        assert helped.returncode == 0, f"{path}: {helped.stderr}"
        below = [other for other, _ in named if len(other) > len(path) and other[:len(path)] == path]
        if below:
            for other in below:
                assert f"homepwner {' '.join(other)}" in helped.stdout, f"{path} --help does not name {other}: {helped.stdout[:300]!r}"
        else:
            assert helped.stdout.startswith(f"OVERVIEW: {summary}\n"), f"{path}: {helped.stdout[:200]!r} vs {summary!r}"


def test_the_links_run_each_service_and_together_make_thumbnails(prefix, tmp_path):
    """Each link is its program (the same help as 'homepwner NAME --help'); started by the links,
    the four serve together: an image put is thumbnailed by the worker, all four answer health,
    and each stops cleanly on SIGTERM."""
    import signal
    import socket
    import time

    cli = str(prefix / "bin/homepwner")
    for name in SERVICES:
        linked = subprocess.run([str(prefix / "bin" / name), "--help"], capture_output=True, text=True, timeout=30)
        named = subprocess.run([cli, name, "--help"], capture_output=True, text=True, timeout=30)
        assert linked.returncode == 0 and named.returncode == 0, (linked.stderr, named.stderr)
        assert linked.stdout == named.stdout and f"USAGE: {name} [options]" in linked.stdout, linked.stdout[:300]
    wrong = subprocess.run([str(prefix / "bin/item-service"), "--no-such-option"], capture_output=True, text=True, timeout=30)
    assert wrong.returncode == 2 and "item-service: " in wrong.stderr and "--no-such-option" in wrong.stderr, wrong.stderr

    def port() -> str:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return f"tcp://127.0.0.1:{s.getsockname()[1]}"

    item, image, capture, thumbnail = port(), port(), port(), port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPWNER_")}
    runs = {
        "image-service": ["--rpc", image, "--events", port(), "--data-dir", str(tmp_path / "images"), "--thumbnail-sizes", "64,256"],
        "item-service": ["--rpc", item, "--events", port(), "--data-dir", str(tmp_path / "items"), "--image-service", image],
        "capture-worker": ["--rpc", capture, "--item-service", item, "--image-service", image],
        "thumbnail-worker": ["--rpc", thumbnail, "--item-service", item, "--image-service", image],
    }
    processes = {}
    try:
        for name, arguments in runs.items():
            log = open(tmp_path / f"{name}.log", "wb")
            processes[name] = subprocess.Popen([str(prefix / "bin" / name), *arguments], stdout=log, stderr=subprocess.STDOUT, env=env)
        endpoints = ["--item", item, "--image", image, "--capture-worker", capture, "--thumbnail-worker", thumbnail]
        deadline = time.monotonic() + 30
        while True:
            health = subprocess.run([cli, "health", "all", *endpoints, "--timeout", "1000"], capture_output=True, text=True, timeout=30, env=env)
            if health.returncode == 0:
                break
            assert time.monotonic() < deadline, health.stdout + health.stderr
            time.sleep(0.3)
        for name in SERVICES:
            assert name in health.stdout, health.stdout
        photo = ROOT / "Tests/Fixtures/exif-orientation/Landscape_6.jpg"
        put = subprocess.run([cli, "image", "put", str(photo), "--image", image, "--json"], capture_output=True, text=True, timeout=60, env=env)
        assert put.returncode == 0, put.stderr
        batch = subprocess.run([cli, "thumbs", "batch", "--missing", "--item", item, "--image", image, "--json"],
                               capture_output=True, text=True, timeout=120, env=env)
        assert batch.returncode == 0, batch.stdout + batch.stderr
        listed = subprocess.run([cli, "image", "ls", "--image", image, "--json"], capture_output=True, text=True, timeout=60, env=env)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.count('"THUMBNAIL"') == 2, listed.stdout
    finally:
        for name, process in processes.items():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        codes = {name: process.wait(timeout=15) for name, process in processes.items()}
    assert codes == {name: 0 for name in processes}, {n: (tmp_path / f"{n}.log").read_text()[-800:] for n in processes}
    # Each logged under its own name: the program chosen by the link, not 'homepwner'.
    for name in SERVICES:
        assert f" {name}: " in (tmp_path / f"{name}.log").read_text(), name
