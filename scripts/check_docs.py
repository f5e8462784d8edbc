#!/usr/bin/env python3
"""Checks README.md and the book (docs/src/*.md); run by `make docs` after `mdbook build docs`.

(a) Links: every relative link and image resolves to a file of the repository, and every `#anchor` to a heading
    of the file it points into (mdBook's ids: the heading's text lowercased, whitespace to '-', every character
    other than letters, digits, '-' and '_' dropped; a repeated id gets -1, -2, …). SUMMARY.md lists every
    chapter of docs/src/ and every chapter it lists exists. No machine path (/home/…, /root/…, /work/…) appears.
(b) Commands: every line `$ relattn …` of a ```console block is run with the CLI binary ($RELATTN_BIN, default
    target/debug/relattn) in a fresh temporary directory per block, where `models/` is the repository's, so a
    command may read what an earlier command of its block wrote; each must exit with 0. A ```console block holds
    nothing but such commands (a line ending in '\\' continues on the next) and, without a '$', what they print;
    no other block may show a relattn command. DOCS_SKIP_COMMANDS=1 skips the runs (saying so); otherwise a
    missing binary is an error.

Standard library only: python3 scripts/check_docs.py
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOOK_SRC = os.path.join(ROOT, "docs", "src")
COMMAND_TIMEOUT_S = 600
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:home|root|work|Users)/")
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^`\s]*)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
INLINE_LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)=\"([^\"]+)\"", re.I)
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def rel(path):
    return os.path.relpath(path, ROOT)


def parse(path):
    """The file's lines outside code blocks as (line number, text), and its code blocks as
    (first line number, info string, [(line number, text)])."""
    prose, blocks, block = [], [], None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f.read().split("\n"), 1):
            if block is None:
                m = FENCE.match(line)
                if m:
                    block = {"fence": m.group(2), "start": number, "info": m.group(3).lower(), "lines": []}
                else:
                    prose.append((number, line))
            elif line.strip().startswith(block["fence"][0] * len(block["fence"])) and not line.strip().strip(block["fence"][0]):
                blocks.append((block["start"], block["info"], block["lines"]))
                block = None
            else:
                block["lines"].append((number, line))
    if block is not None:
        raise SystemExit(f"{rel(path)}:{block['start']}: a code block that is never closed")
    return prose, blocks


def heading_text(markdown):
    """The text mdBook takes a heading's id from: code spans' contents, links' text, no emphasis or HTML."""
    text = CODE_SPAN.sub(lambda m: m.group(2).strip(), markdown)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    return text.replace("*", "")


def heading_id(text):
    out = []
    for ch in text.strip().lower():
        if ch.isalnum() or ch in "_-":
            out.append(ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


_anchors = {}


def anchors(path):
    """Every id the headings of a Markdown file get (mdBook's rule, duplicates numbered)."""
    if path not in _anchors:
        used = set()
        prose, _ = parse(path)
        for _, line in prose:
            m = HEADING.match(line)
            if not m:
                continue
            custom = re.search(r"\{#([\w-]+)[^}]*\}\s*$", m.group(2))
            if custom:
                used.add(custom.group(1))
                continue
            base = heading_id(heading_text(m.group(2)))
            ident, k = base, 0
            while ident in used:
                k += 1
                ident = f"{base}-{k}"
            used.add(ident)
        _anchors[path] = used
    return _anchors[path]


def check_links(path, errors):
    prose, _ = parse(path)
    for number, line in prose:
        where = f"{rel(path)}:{number}"
        if MACHINE_PATH.search(line):
            errors.append(f"{where}: a machine path: {line.strip()}")
        unquoted = CODE_SPAN.sub("", line)
        targets = [m.group(3) for m in INLINE_LINK.finditer(unquoted)]
        targets += HTML_LINK.findall(unquoted)
        m = REFERENCE_DEF.match(unquoted)
        if m:
            targets.append(m.group(1))
        for target in targets:
            if not target:
                errors.append(f"{where}: an empty link")
                continue
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # https:, mailto:, …: not checked offline
            file_part, _, anchor = target.partition("#")
            if file_part.startswith("/"):
                errors.append(f"{where}: '{target}' is absolute; links are relative to the file")
                continue
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(resolved):
                errors.append(f"{where}: '{target}': {rel(resolved)} does not exist")
                continue
            if not os.path.realpath(resolved).startswith(ROOT + os.sep):
                errors.append(f"{where}: '{target}' points outside the repository")
                continue
            if anchor:
                if not resolved.endswith(".md"):
                    errors.append(f"{where}: '{target}': an anchor into a file that is not Markdown")
                elif anchor not in anchors(resolved):
                    errors.append(f"{where}: '{target}': {rel(resolved)} has no heading with the id '{anchor}'")


def check_summary(errors):
    summary = os.path.join(BOOK_SRC, "SUMMARY.md")
    if not os.path.exists(summary):
        errors.append("docs/src/SUMMARY.md does not exist")
        return
    prose, _ = parse(summary)
    listed = set()
    for number, line in prose:
        for m in INLINE_LINK.finditer(line):
            target = m.group(3).partition("#")[0]
            if not target:
                errors.append(f"docs/src/SUMMARY.md:{number}: '{m.group(2)}' is a draft chapter (no file)")
                continue
            chapter = os.path.normpath(os.path.join(BOOK_SRC, target))
            if chapter in listed:
                errors.append(f"docs/src/SUMMARY.md:{number}: {target} is listed twice")
            listed.add(chapter)
            if not os.path.isfile(chapter):
                errors.append(f"docs/src/SUMMARY.md:{number}: the chapter {target} does not exist")
    for dirpath, _, files in os.walk(BOOK_SRC):
        for name in files:
            path = os.path.join(dirpath, name)
            if name.endswith(".md") and name != "SUMMARY.md" and path not in listed:
                errors.append(f"{rel(path)}: a chapter SUMMARY.md does not list")


def commands_of(path, errors):
    """The console blocks' commands: [(first line number, [(line number, argv)])]; each block's layout checked."""
    _, blocks = parse(path)
    out = []
    for start, info, lines in blocks:
        if info != "console":
            for number, text in lines:
                if re.match(r"^\s*(?:\$\s*)?relattn\s", text):
                    errors.append(f"{rel(path)}:{number}: a relattn command in a ```{info or 'plain'} block: "
                                  "every CLI example goes in a ```console block, as '$ relattn …'")
            continue
        commands, pending, pending_at = [], None, None
        for number, text in lines:
            if pending is not None:
                pending += " " + text.strip()
                if not pending.endswith("\\"):
                    commands.append((pending_at, pending))
                    pending = None
                else:
                    pending = pending[:-1].rstrip()
                continue
            if not text.startswith("$ "):
                continue  # what the command prints
            command = text[2:].strip()
            if command.endswith("\\"):
                pending, pending_at = command[:-1].rstrip(), number
            else:
                commands.append((number, command))
        if pending is not None:
            errors.append(f"{rel(path)}:{pending_at}: a command continued past the end of its block")
        block = []
        for number, command in commands:
            where = f"{rel(path)}:{number}"
            try:
                lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
                lexer.whitespace_split = True
                lexer.commenters = "#"
                argv = list(lexer)
            except ValueError as e:
                errors.append(f"{where}: cannot split '{command}': {e}")
                continue
            if not argv or argv[0] != "relattn":
                errors.append(f"{where}: a ```console block runs relattn commands only: '{command}'")
                continue
            shell = [a for a in argv if a and set(a) <= set("|&;<>()")]
            if shell:
                errors.append(f"{where}: one relattn command a line, no shell ({' '.join(shell)}): '{command}'")
                continue
            block.append((number, argv))
        if not commands:
            errors.append(f"{rel(path)}:{start}: a ```console block with no '$ relattn' command")
        out.append((start, block))
    return out


def run_commands(files, errors):
    found = [(path, start, block) for path in files for start, block in commands_of(path, errors)]
    total = sum(len(block) for _, _, block in found)
    if os.environ.get("DOCS_SKIP_COMMANDS") == "1":
        print(f"check_docs: DOCS_SKIP_COMMANDS=1: the {total} relattn commands of {len(found)} console blocks were NOT run")
        return
    binary = os.path.abspath(os.environ.get("RELATTN_BIN") or os.path.join(ROOT, "target", "debug", "relattn"))
    if not os.access(binary, os.X_OK):
        errors.append(f"the CLI binary {binary} does not exist (build it with `cargo build -p relattn-cli`, set "
                      "RELATTN_BIN, or set DOCS_SKIP_COMMANDS=1 to skip the commands)")
        return
    ran = 0
    for path, start, block in found:
        with tempfile.TemporaryDirectory(prefix="relattn-docs-") as work:
            os.symlink(os.path.join(ROOT, "models"), os.path.join(work, "models"))
            os.symlink(os.path.join(ROOT, "tests"), os.path.join(work, "tests"))  # tests/fixtures: the atlas example
            for number, argv in block:
                where = f"{rel(path)}:{number}"
                began = time.monotonic()
                try:
                    done = subprocess.run([binary] + argv[1:], cwd=work, stdin=subprocess.DEVNULL, capture_output=True,
                                          text=True, errors="replace", timeout=COMMAND_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    errors.append(f"{where}: '{shlex.join(argv)}' ran past {COMMAND_TIMEOUT_S} s")
                    break
                ran += 1
                seconds = time.monotonic() - began
                print(f"check_docs: {where}: exit {done.returncode} in {seconds:.1f} s: {shlex.join(argv)}")
                if done.returncode != 0:
                    errors.append(f"{where}: '{shlex.join(argv)}' exited with {done.returncode}:\n"
                                  + (done.stderr.strip() or done.stdout.strip())[-2000:])
                    break  # the block's later commands may read what this one did not write
    print(f"check_docs: ran {ran} of {total} relattn commands ({binary})")


def main():
    sys.stdout.reconfigure(line_buffering=True)  # progress in order with the errors on stderr
    files = [os.path.join(ROOT, "README.md")]
    for dirpath, _, names in os.walk(BOOK_SRC):
        files += sorted(os.path.join(dirpath, n) for n in names if n.endswith(".md"))
    errors = []
    for path in files:
        check_links(path, errors)
    check_summary(errors)
    run_commands(files, errors)
    if errors:
        print("\n".join(f"check_docs: {e}" for e in errors), file=sys.stderr)
        print(f"check_docs: {len(errors)} problem(s)", file=sys.stderr)
        return 1
    ran = "skipped" if os.environ.get("DOCS_SKIP_COMMANDS") == "1" else "OK"
    print(f"check_docs: {len(files)} files: links, anchors and SUMMARY.md OK; commands {ran}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
