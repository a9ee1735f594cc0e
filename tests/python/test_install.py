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


def test_install_puts_the_executables_completions_and_man_page_in_the_prefix(prefix):
    for product in ("homepwner", "item-service", "image-service", "capture-worker", "thumbnail-worker"):
        assert os.access(prefix / "bin" / product, os.X_OK), product
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
    assert bash_complete(prefix, "homepwner", "it") == ["item"]
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
    assert complete("homepwner it") == ["item"]
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
