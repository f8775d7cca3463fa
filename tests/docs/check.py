#!/usr/bin/env python3
"""Checks the guide: every Markdown link between the repository's pages resolves (file and
#anchor), docs/SUMMARY.md lists every guide page, and every shell block in the README and the
guide runs, and every warning and error line the server logs (warn!/error! in src/) is on
docs/troubleshooting.md.

Shell blocks (```sh) run page by page, in order, in one bash script per page (`set -e`), in a
scratch directory, with target/release first on PATH (so `palisade` is the built binary) and
in a network namespace of its own (`unshare -n`: a loopback nobody else uses, so an example's
2181 or 8080 touches no other server). Where namespaces are not allowed the commands are not
run, and the output says so. A block preceded by
`<!-- check: skip: REASON -->` is not run (each skipped block and its reason are printed); a
block preceded by `<!-- check: background -->` starts a server: it runs in the background and
the page's next block goes on. Every process a page starts is killed (its process group) when
the page's script ends. Blocks in other languages (```text, ```ini, ```json) are shown, not run.

usage: tests/docs/check.py [--links-only]
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE_TIMEOUT = 60


def pages():
    out = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "ARCHITECTURE.md")]
    for d, _, files in os.walk(os.path.join(ROOT, "docs")):
        out += [os.path.join(d, f) for f in sorted(files) if f.endswith(".md")]
    return out


def slug(heading):
    """GitHub's (and mdBook's) anchor for a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    seen, out = {}, set()
    for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, flags=re.M):
        base = slug(m.group(1))
        n = seen.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return out


def check_links():
    errors, count = [], 0
    for page in pages():
        text = open(page, encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        text = re.sub(r"`[^`\n]*`", "", text)
        for m in re.finditer(r"\[[^\]]*\]\(([^)\s]+)\)", text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue  # http(s), mailto: not fetched (no internet in CI)
            count += 1
            file, _, anchor = target.partition("#")
            dest = page if not file else os.path.normpath(os.path.join(os.path.dirname(page), file))
            rel = os.path.relpath(page, ROOT)
            if not os.path.exists(dest):
                errors.append(f"{rel}: link to missing {target}")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                errors.append(f"{rel}: link to missing anchor {target}")
    return errors, count


def log_messages():
    """(file, message) for each warn!/error! in src/ outside tests: the message is the first
    string literal among the macro's own arguments that is not a field's value."""
    out = []
    for d, _, files in os.walk(os.path.join(ROOT, "src")):
        for f in sorted(files):
            path = os.path.join(d, f)
            if not f.endswith(".rs") or f.endswith("_test.rs") or f == "tests.rs" \
                    or os.sep + "sim" + os.sep in path:
                continue
            text = open(path, encoding="utf-8").read().split("#[cfg(test)]")[0]
            for m in re.finditer(r"\b(warn|error)!\(", text):
                depth, j, msg = 1, m.end(), None
                while depth and j < len(text):
                    c = text[j]
                    if c == '"':
                        k = j + 1
                        while text[k] != '"':
                            k += 2 if text[k] == "\\" else 1
                        if depth == 1 and msg is None and \
                                not re.search(r"=\s*$", text[m.end():j]):
                            msg = re.sub(r"\\\n\s*", "", text[j + 1:k])
                        j = k
                    elif c in "([{":
                        depth += 1
                    elif c in ")]}":
                        depth -= 1
                    j += 1
                out.append((os.path.relpath(path, ROOT), msg))
    return out


def check_log_messages():
    """Every warning and error the server logs is in docs/troubleshooting.md (its text up to
    the first placeholder)."""
    page = open(os.path.join(ROOT, "docs", "troubleshooting.md"), encoding="utf-8").read()
    errors, count = [], 0
    for path, msg in log_messages():
        if msg is None:
            continue  # a message built elsewhere (the lines around it say what it is)
        fixed = msg.split("{")[0].strip()
        if len(fixed) < 8:
            continue
        count += 1
        if fixed.replace("\\'", "'") not in page:
            errors.append(f"{path}: the log line {fixed!r} is not in docs/troubleshooting.md")
    return errors, count


def check_summary():
    summary = os.path.join(ROOT, "docs", "SUMMARY.md")
    listed = set(re.findall(r"\]\(([^)#]+)\)", open(summary, encoding="utf-8").read()))
    guide = {f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md") and f != "SUMMARY.md"}
    return [f"docs/{f} is not in docs/SUMMARY.md" for f in sorted(guide - listed)]


def guide_pages():
    """The pages whose commands run: the README and the guide (docs/*.md), not the design
    notes, whose commands are benchmark and test runs of minutes."""
    docs = os.path.join(ROOT, "docs")
    return [os.path.join(ROOT, "README.md")] + [
        os.path.join(docs, f) for f in sorted(os.listdir(docs)) if f.endswith(".md")]


def blocks(page):
    """(kind, code, line) for each ```sh block; kind: run, background or skip:REASON."""
    lines = open(page, encoding="utf-8").read().split("\n")
    out, i, mark = [], 0, "run"
    while i < len(lines):
        line = lines[i]
        m = re.match(r"\s*<!-- check: (.*?) -->", line)
        if m:
            mark = m.group(1)
        elif re.match(r"^\s*```", line):
            lang = line.strip()[3:].strip()
            j = i + 1
            while j < len(lines) and not re.match(r"^\s*```", lines[j]):
                j += 1
            if lang in ("sh", "bash", "shell"):
                out.append((mark, "\n".join(lines[i + 1:j]), i + 1))
            mark = "run"
            i = j
        i += 1
    return out


def isolated():
    """Whether pages can run in their own network namespace (an empty loopback: the ports in
    the examples, defaults included, are their own)."""
    try:
        return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    except OSError:
        return False


def run_page(page, bindir):
    rel = os.path.relpath(page, ROOT)
    todo = blocks(page)
    if not todo:
        return [], 0, []
    script, ran, skipped = ["set -e"], 0, []
    for kind, code, line in todo:
        if kind.startswith("skip"):
            skipped.append(f"{rel}:{line}: {kind}")
            continue
        ran += 1
        script.append(f"echo '--- {rel}:{line}' >&2")
        if kind == "background":
            script.append(f"( {code}\n) > bg-{line}.log 2>&1 &")
        else:
            script.append(code)
    if ran == 0:
        return [], 0, skipped
    scratch = tempfile.mkdtemp(prefix="palisade-docs-")
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", HOME=scratch,
               PALISADE_REPO=ROOT)
    argv = ["unshare", "-n", "bash", "-c", "ip link set lo up && exec bash -c \"$0\"",
            "\n".join(script)]
    # Output to a file, not a pipe: servers left running in the background hold it open.
    log_path = os.path.join(scratch, "check.log")
    errors = []
    with open(log_path, "w") as log:
        proc = subprocess.Popen(argv, cwd=scratch, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=PAGE_TIMEOUT)
            if proc.returncode != 0:
                out = open(log_path, encoding="utf-8", errors="replace").read()
                errors.append(f"{rel}: a command failed (exit {proc.returncode}):\n{out[-3000:]}")
        except subprocess.TimeoutExpired:
            errors.append(f"{rel}: commands took over {PAGE_TIMEOUT} s")
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            time.sleep(0.2)
            shutil.rmtree(scratch, ignore_errors=True)
    return errors, ran, skipped


def main():
    args = sys.argv[1:]
    errors, links = check_links()
    errors += check_summary()
    print(f"links: {links} internal links checked", flush=True)
    log_errors, messages = check_log_messages()
    errors += log_errors
    print(f"log lines: {messages} warnings and errors looked for in docs/troubleshooting.md")
    if "--links-only" not in args:
        bindir = os.path.join(ROOT, "target", "release")
        if not os.path.exists(os.path.join(bindir, "palisade")):
            sys.exit("build first: cargo build --release")
        if not isolated():
            # The examples use the well-known ports (2181, 8080, ...) as a reader would; run
            # outside a namespace of their own they could reach another server on this host.
            print("COMMANDS NOT RUN: this host allows no network namespace (unshare -n); "
                  "only links and log lines were checked")
        else:
            ran_total, skipped_total = 0, []
            for page in guide_pages():
                e, ran, skipped = run_page(page, bindir)
                errors += e
                ran_total += ran
                skipped_total += skipped
            print(f"commands: {ran_total} shell blocks run, each page in a network namespace "
                  f"of its own; {len(skipped_total)} not run:")
            for s in skipped_total:
                print(f"  {s}")
    for e in errors:
        print(f"FAIL {e}")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
