"""Every path or config string reaches a rule's shell quoted: no placeholder of params, input, output, wildcards or log
is left without ``:q`` unless the rule names it in a ``# unquoted: params.x (why)`` comment above its ``shell:``."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, snakemake, tiny_config

PLACEHOLDER = re.compile(r"(?<!\{)\{((?:params|input|output|wildcards|log)(?:\.\w+)?)(:q)?\}(?!\})")
UNQUOTED = re.compile(r"^\s*# unquoted: ([\w., ]+?) \(")


def rule_blocks(path: Path) -> dict[str, list[str]]:
    """Each rule's indented lines, by rule name (``use rule ... as NAME with:`` included)."""
    blocks: dict[str, list[str]] = {}
    current = None
    for line in path.read_text(encoding="utf-8").split("\n"):
        m = re.match(r"^(?:rule (\w+)|use rule \w+ as (\w+) with):", line)
        if m:
            current = blocks.setdefault(m.group(1) or m.group(2), [])
        elif current is not None and (line.startswith(" ") or not line.strip()):
            current.append(line)
        elif line.strip():
            current = None
    return blocks


def shell_text(lines: list[str]) -> str:
    out, on = [], False
    for line in lines:
        if re.match(r"^    shell:\s*$", line):
            on = True
        elif on and (line.startswith("        ") or not line.strip()):
            out.append(line)
        else:
            on = False
    return "\n".join(out)


def unquoted_placeholders() -> dict[str, list[str]]:
    """Rule -> placeholders without :q that its ``# unquoted:`` comment does not name; and names it gives in vain."""
    found = {}
    for smk in sorted((REPO / "rules").glob("*.smk")):
        for rule, lines in rule_blocks(smk).items():
            shell = shell_text(lines)
            bare = {p for p, q in PLACEHOLDER.findall(shell) if not q}
            allowed = {n.strip() for line in lines if (m := UNQUOTED.match(line)) for n in m.group(1).split(",")}
            problems = sorted(bare - allowed) + [f"{n} (named unquoted, not in the shell)" for n in allowed - bare]
            if problems:
                found[f"{smk.name}:{rule}"] = problems
    return found


def test_every_shell_placeholder_is_quoted_or_explained():
    assert unquoted_placeholders() == {}


def test_the_check_sees_an_unquoted_placeholder(tmp_path, monkeypatch):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "x.smk").write_text(
        'rule a:\n    shell:\n        "tool --in {input.x} --out {output:q} {params.flags}"\n\n\n'
        "rule b:\n    # unquoted: params.flags (fixed flags)\n    shell:\n"
        '        "tool {params.flags} --log {log:q}"\n'
    )
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert unquoted_placeholders() == {"x.smk:a": ["input.x", "params.flags"]}


@pytest.mark.slow
def test_a_hostile_target_tokenizer_path_reaches_the_step_as_one_argument(tmp_path):
    """mumo.target_tokenizer with a space and a command substitution: the shell runs nothing and the step gets the
    path verbatim (the printed mumo_head command is run by bash with a stub `python` that records its argv)."""
    hostile = tmp_path / "tok $(touch PWNED).json"
    hostile.write_text("{}")
    work = tmp_path / "work"
    work.mkdir()
    config = yaml_config(work, hostile)
    target = "results/default/smollm2/th/mumo/Multi-init/head"
    out = snakemake([target, "-n", "-p", "--forceall", "--configfile", str(config)], cwd=work)
    assert out.returncode == 0, out.stderr + out.stdout
    commands = [line for line in out.stdout.splitlines() if "workflow_scripts.mumo train" in line]
    assert commands, out.stdout
    command = commands[0].split("Shell command: ", 1)[-1].strip()
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "python").write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    (stub / "python").chmod(0o755)
    run = subprocess.run(
        ["bash", "-c", command.split(" 2>>")[0]],
        cwd=work,
        env={**os.environ, "PATH": f"{stub}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    argv = json.loads(run.stdout)
    assert argv[argv.index("--target-tokenizer") + 1] == str(hostile)
    assert not list(tmp_path.rglob("PWNED")) and not (work / "PWNED").exists()
    assert shlex.split(command.split(" 2>>")[0])[1:] == argv


def yaml_config(work: Path, target_tokenizer: Path) -> Path:
    import yaml

    path = tiny_config(work, "config.yaml")
    config = yaml.safe_load(path.read_text())
    config["mumo"]["target_tokenizer"] = str(target_tokenizer)
    path.write_text(yaml.safe_dump(config))
    return path
