"""Rebuild a single-file corpus (benchmarks/realworld, benchmarks/realworld2) from git mirrors.

Each SOURCES.md there is a table `| corpus file | repo | path | commit | lines | chars | notes |`.
This script reads every row, takes `<commit>:<path>` from the mirror of `repo`, checks its line
count (newline characters, as `wc -l`) and character count (decoded text, as the index's
`total_chars`) against the table, and writes it as <out>/<corpus file>, byte for byte. Stdlib only.

    python benchmarks/rebuild_files.py benchmarks/realworld2/SOURCES.md /work/corpora/realworld2 \
        --mirrors /work/.mirror [--mirror owner/name=GITDIR ...] [--check]

A row whose commit (or blob) the mirror lacks is reported and left out: no other commit is
substituted, except where SAME_TEXT below records that the index's text at the listed commit
(`read_file`) was compared byte for byte with a blob the mirror has (the index crawled a commit
the upstream history lacks; the file is unchanged). Other such files have to be taken from the
index by hand; --have DIR accepts files saved that way and verifies them like the rest.
Exit status 1 when any row is not rebuilt and verified.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

SHA = re.compile(r"^[0-9a-f]{40}$")

# (repo, path, listed commit) -> the mirror commit whose blob is byte-identical to the index's
# text at the listed commit, compared on 2026-12-02 (read_file text vs `git cat-file blob`).
SAME_TEXT = {
    ("pytorch/examples", "time_sequence_prediction/train.py", "04b1f3cec923d40972d998a7ed3c00c1b37e765e"):
        "14e2f68f08924985936e8860a9b67b9b30abf469",
    ("pytorch/examples", "mnist_rnn/main.py", "190e03515818f68842206ee075e5e8782360b564"):
        "e37528268cb0f592af006efaa6bb593501ef86ff",
}


def rows(sources: Path) -> list[dict]:
    out = []
    for line in sources.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and SHA.match(cells[3]) and cells[4].isdigit() and cells[5].isdigit():
            out.append({"file": cells[0], "repo": cells[1], "path": cells[2], "commit": cells[3],
                        "lines": int(cells[4]), "chars": int(cells[5])})
    return out


def find_mirror(repo: str, mirrors: Path | None, explicit: dict[str, str]) -> Path | None:
    if repo in explicit:
        return Path(explicit[repo])
    if mirrors is None:
        return None
    base = mirrors / repo.replace("/", "+")
    for candidate in (base / "repo" / ".git", base / "repo", base):
        if (candidate / "objects").is_dir():
            return candidate
    return None


def blob(git_dir: Path, commit: str, path: str) -> tuple[bytes | None, str | None]:
    kind = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "-t", commit], capture_output=True, text=True)
    if kind.stdout.strip() != "commit":
        return None, f"commit {commit} is not in the mirror {git_dir}"
    got = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "blob", f"{commit}:{path}"], capture_output=True)
    if got.returncode:
        return None, f"{commit}:{path} is not readable in the mirror ({got.stderr.decode().strip()})"
    return got.stdout, None


def verify(row: dict, data: bytes) -> str | None:
    text = data.decode("utf-8", errors="replace")
    lines, chars = text.count("\n"), len(text)
    if (lines, chars) != (row["lines"], row["chars"]):
        return f"SOURCES.md states {row['lines']} lines / {row['chars']} chars, got {lines} / {chars}"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sources", type=Path, help="a SOURCES.md with the corpus-file table")
    ap.add_argument("out", type=Path, help="directory the corpus files are written to")
    ap.add_argument("--mirrors", type=Path, help="directory holding <owner>+<name>/repo git mirrors")
    ap.add_argument("--mirror", action="append", default=[], metavar="OWNER/NAME=GITDIR")
    ap.add_argument("--have", type=Path, help="directory of files saved from the index, used for rows no mirror has")
    ap.add_argument("--check", action="store_true", help="verify only; write nothing")
    ap.add_argument("--manifest", type=Path, help="write the per-row results as JSON here")
    args = ap.parse_args(argv)
    explicit = dict(m.split("=", 1) for m in args.mirror)
    table = rows(args.sources)
    if not table:
        raise SystemExit(f"{args.sources}: no corpus-file rows found")
    if not args.check:
        args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for row in table:
        git_dir = find_mirror(row["repo"], args.mirrors, explicit)
        data, problem = (None, f"no mirror of {row['repo']} found") if git_dir is None else blob(git_dir, row["commit"], row["path"])
        origin = "mirror"
        same = SAME_TEXT.get((row["repo"], row["path"], row["commit"]))
        if data is None and git_dir is not None and same:
            data, _ = blob(git_dir, same, row["path"])
            origin = f"mirror blob of {same[:12]}, recorded identical to the index text at the listed commit"
        if data is None and args.have and (args.have / row["file"]).is_file():
            data, origin = (args.have / row["file"]).read_bytes(), f"saved from the index ({args.have})"
            problem = None
        if data is not None:
            problem = verify(row, data)
        if data is not None and not problem and not args.check:
            (args.out / row["file"]).write_bytes(data)
        results.append({**row, "ok": problem is None, "origin": origin if data is not None else None, "problem": problem})
        print(f"{'ok  ' if problem is None else 'FAIL'} {row['file']} ({row['repo']} {row['commit'][:12]}, {origin})"
              + (f"\n     {problem}" if problem else ""))
    if args.manifest:
        args.manifest.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    failed = [r for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)} of {len(results)} files rebuilt and verified")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
