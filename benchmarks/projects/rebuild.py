"""Rebuild the labelled projects' third-party trees from git mirrors (stdlib only).

The projects' code is not committed (it is third-party); each benchmarks/projects/<slug>/SOURCES.md
says where it came from. This script reads the repository and commit from each SOURCES.md table,
extracts that commit's files from a bare git mirror into <corpus>/<slug>/, keeps and removes what
the table below says (transcribed from each SOURCES.md's "removed"/"Rebuild:" text, which is free
prose), and checks the Python file and line counts against SOURCES.md's "Python files / lines" row.

    python benchmarks/projects/rebuild.py --mirrors /work/.mirror [--corpus /work/corpora/projects]
    python benchmarks/projects/rebuild.py --mirror vits=/path/to/vits.git --project vits
    python benchmarks/projects/rebuild.py --mirrors /work/.mirror --check   # verify, write nothing

A mirror for repository owner/name is looked up as <mirrors>/<owner>+<name>/repo (the layout the
search tool's `fetch` writes; a non-bare clone's repo/.git works too) or <mirrors>/<owner>+<name>.
Only the commit named in SOURCES.md is used: a mirror that lacks it, or lacks one of the kept
blobs, fails that project (nothing is substituted). Exit status 1 when any project failed.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = Path("/work/corpora/projects")

# What each tree keeps beyond the *.py files (configuration the SOURCES.md "Rebuild:" or
# "linted tree" text names), and what is removed after extraction (a path ending in "/" is a
# directory). Every removal and extra must appear in that project's SOURCES.md in backticks,
# which check_table() enforces, so a typo here cannot silently change a tree.
TABLE: dict[str, dict[str, list[str]]] = {
    "centernet": {"remove": ["src/tools/", "src/lib/models/networks/DCNv2/"]},
    "ddpm-lucidrains": {"extra": ["pyproject.toml"]},
    "biggan-ajbrock": {"remove": ["sync_batchnorm/"]},
    "deeplab-xception": {"remove": ["modeling/sync_batchnorm/"]},
    "efficientdet-zylo117": {"remove": ["utils/sync_batchnorm/"]},
    "yolov4-tianxiaomo": {"remove": ["tool/tv_reference/"]},
    "yolov4-argusswift": {"remove": [
        "onnx_transform.py",
        "video_test.py",
        "utils/flops_counter.py",
        "utils/modelsize.py",
        "utils/get_map.py",
        "utils/get_gt_txt.py",
        "utils/coco_to_voc.py",
        "utils/xml_to_txt.py",
        "utils/voc.py",
        "utils/coco.py",
        "utils/kmeans.py",
        "utils/imshowAtt.py",
        "utils/datasets_coco.py",
    ]},
    "diffusers-unconditional": {"remove": [
        "benchmarks/",
        "docs/",
        "examples/advanced_diffusion_training/",
        "examples/amused/",
        "examples/cogvideo/",
        "examples/cogview4-control/",
        "examples/community/",
        "examples/conftest.py",
        "examples/consistency_distillation/",
        "examples/controlnet/",
        "examples/cosmos/",
        "examples/cosmos3/",
        "examples/custom_diffusion/",
        "examples/discrete_diffusion/",
        "examples/dreambooth/",
        "examples/flux-control/",
        "examples/inference/",
        "examples/instruct_pix2pix/",
        "examples/kandinsky2_2/",
        "examples/model_search/",
        "examples/profiling/",
        "examples/reinforcement_learning/",
        "examples/research_projects/",
        "examples/server-async/",
        "examples/server/",
        "examples/t2i_adapter/",
        "examples/test_examples_utils.py",
        "examples/text_to_image/",
        "examples/textual_inversion/",
        "examples/vqgan/",
        "scripts/",
        "setup.py",
        "src/",
        "tests/",
        "utils/",
    ]},
    "e2-tts-accelerate": {"extra": ["pyproject.toml"]},
    "fastspeech2": {"remove": ["hifigan/"]},
    "styletts2-accelerate": {"remove": ["train_second.py", "train_finetune.py"]},
    "denoiser-facebook": {"remove": ["denoiser/live.py", "hubconf.py", "setup.py"]},
    "flair1": {"extra": ["pyproject.toml", "setup.cfg"]},
    "lightning-hydra-template": {"remove": ["src/models/mnist_module.py"]},
    "lightning-transformers": {"extra": ["pyproject.toml", "setup.cfg"], "remove": ["docs/", "tests/"]},
    "lit-llama": {"remove": ["finetune/full.py"]},
    "llava-hf-trainer": {"remove": ["llava/eval/", "llava/serve/", "predict.py", "scripts/"]},
    "pytorch-accelerated": {"remove": ["docs/"]},
    "pytorch-gan-eriklindernoren": {"remove": [
        "implementations/aae/",
        "implementations/began/",
        "implementations/bgan/",
        "implementations/bicyclegan/",
        "implementations/ccgan/",
        "implementations/cgan/",
        "implementations/cluster_gan/",
        "implementations/cogan/",
        "implementations/context_encoder/",
        "implementations/dcgan/",
        "implementations/discogan/",
        "implementations/dragan/",
        "implementations/dualgan/",
        "implementations/ebgan/",
        "implementations/gan/",
        "implementations/lsgan/",
        "implementations/munit/",
        "implementations/pixelda/",
        "implementations/relativistic_gan/",
        "implementations/sgan/",
        "implementations/softmax_gan/",
        "implementations/srgan/",
        "implementations/stargan/",
        "implementations/unit/",
        "implementations/wgan/",
        "implementations/wgan_div/",
        "implementations/wgan_gp/",
    ]},
    "pytorch-segmentation": {"remove": ["utils/sync_batchnorm/", "utils/lovasz_losses.py", "utils/torchsummary.py"]},
    "parseq-lightning": {"remove": ["hubconf.py", "bench.py", "read.py", "tools/art_converter.py", "tools/case_sensitive_str_datasets_converter.py", "tools/coco_2_converter.py", "tools/coco_text_converter.py", "tools/create_lmdb_dataset.py", "tools/filter_lmdb.py", "tools/lsvt_converter.py", "tools/mlt19_converter.py", "tools/openvino_converter.py", "tools/textocr_converter.py"]},
    "llm2vec-hf-trainer": {"remove": ["examples/", "setup.py"]},
    "pytorch-unet": {"extra": ["pyproject.toml", "setup.cfg"]},
    "pytorch-vae-antixk": {"remove": ["tests/"]},
    "pytorch-yolov3": {"extra": ["pyproject.toml"]},
    "simclr-spijkervet": {"remove": ["simclr/modules/sync_batchnorm/"]},
    "simcse-hf-trainer": {"remove": ["SentEval/"]},
    "ssd-lufficc": {"remove": ["ssd/modeling/backbone/efficient_net/"]},
    "tevatron-hf-trainer": {"remove": ["examples/", "scripts/", "setup.py", "src/tevatron/eval/", "src/tevatron/megatron/", "src/tevatron/tevax/", "src/tevatron/retriever/tevax/", "src/tevatron/retriever/driver/jax_encode.py", "src/tevatron/retriever/driver/jax_train.py", "src/tevatron/retriever/driver/vllm_encode.py", "src/tevatron/retriever/driver/vllm_encode_mm.py", "src/tevatron/reranker/", "src/tevatron/utils/"]},
    "ssd-qfgaohao": {"remove": ["prune_alexnet.py", "vision/prunning/", "vision/nn/alexnet.py", "convert_to_caffe2_models.py", "run_ssd_live_caffe2.py", "vision/utils/box_utils_numpy.py", "extract_tf_weights.py", "translate_tf_mobilenetv1.py", "visual_tf_models.py", "vision/test/"]},
    "stylegan2-pytorch": {"remove": ["lpips/", "inception.py"]},
    "srlane-fabric": {"remove": ["setup.py", "tools/analysis_tools/speed_measure.py", "configs/datasets/tusimple.py"]},
    "pickscore-accelerate": {"remove": ["setup.py", "trainer/slurm_scripts/", "trainer/utils/FID/", "trainer/utils/slurm_utils.py", "trainer/utils/data_utils.py"]},
    "wav2lip": {"remove": ["face_detection/"]},
    "e2e-asr-liu": {"remove": ["tests/test_audio.py", "tests/test_text.py", "util/generate_vocab_file.py"]},
    "stcn-vos": {"remove": ["download_bl30k.py", "download_datasets.py", "download_model.py", "scripts/"]},
    "semseg-meetps": {"remove": ["ptsemseg/caffe_pb2.py"]},
    "pointnet2-yanx27": {"remove": ["log/", "visualizer/"]},
}

ROW = re.compile(r"^\|\s*([^|]+?)\s*\|\s*(.*?)\s*\|\s*$", re.MULTILINE)
REPO = re.compile(r"(?:github\.com/)?([A-Za-z0-9][\w.-]*/[\w.-]+?)(?:\.git)?(?=[\s)`|]|$)")
SHA = re.compile(r"\b[0-9a-f]{40}\b")
COUNTS = re.compile(r"([\d,]+)\s*(?:files)?\s*[,/]\s*([\d,]+)")


@dataclass
class Source:
    slug: str
    repo: str
    commit: str
    files: int | None  # Python files SOURCES.md states, if it does
    lines: int | None
    extra: list[str] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)


def parse_sources(slug: str, text: str, table: dict = TABLE) -> Source:
    rows = {k.lower(): v for k, v in ROW.findall(text)}
    repo = REPO.search(rows.get("repo", "").replace("`", " "))
    commit = SHA.search(rows.get("commit", ""))
    if not repo or not commit:
        raise ValueError(f"{slug}: SOURCES.md has no repo/commit row")
    counts = COUNTS.search(rows.get("python files / lines", ""))
    files, lines = (int(counts[1].replace(",", "")), int(counts[2].replace(",", ""))) if counts else (None, None)
    entry = table.get(slug, {})
    return Source(slug, repo[1], commit[0], files, lines, list(entry.get("extra", [])), list(entry.get("remove", [])))


def check_table(source: Source, text: str) -> list[str]:
    """Removals and extras the SOURCES.md text does not name (a table typo)."""
    named = set(re.findall(r"`([^`]+)`", text))
    return [f"{source.slug}: {p!r} is in rebuild.py's table but not named in SOURCES.md"
            for p in source.extra + source.remove if p not in named and p.rstrip("/") not in named]


def find_mirror(repo: str, mirrors: Path | None, explicit: dict[str, str], slug: str) -> Path | None:
    if slug in explicit:
        return Path(explicit[slug])
    if repo in explicit:
        return Path(explicit[repo])
    if mirrors is None:
        return None
    base = mirrors / repo.replace("/", "+")
    for candidate in (base / "repo" / ".git", base / "repo", base):
        if (candidate / "objects").is_dir():
            return candidate
    return None


def git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True).stdout


def kept(path: str, source: Source) -> bool:
    if not (path.endswith(".py") or path in source.extra):
        return False
    for r in source.remove:
        if (r.endswith("/") and path.startswith(r)) or path == r:
            return False
    return True


def tree_entries(git_dir: Path, commit: str) -> list[tuple[str, str, str]]:
    """(mode, blob sha, path) of every blob in the commit's tree."""
    out = []
    for rec in git(git_dir, "ls-tree", "-r", "-z", "--full-tree", commit).split(b"\0"):
        if not rec:
            continue
        meta, path = rec.split(b"\t", 1)
        mode, kind, sha = meta.decode().split()
        if kind == "blob":  # submodules ("commit") carry no files
            out.append((mode, sha, path.decode("utf-8", "surrogateescape")))
    return out


def read_blobs(git_dir: Path, shas: list[str]) -> dict[str, bytes | None]:
    """Blob contents by sha, None where the mirror lacks the object (snapshots omit big files)."""
    proc = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
                          input="".join(s + "\n" for s in shas).encode(), capture_output=True, check=True)
    data, pos, blobs = proc.stdout, 0, {}
    for sha in shas:
        end = data.index(b"\n", pos)
        header = data[pos:end].split()
        pos = end + 1
        if header[-1] == b"missing":
            blobs[sha] = None
            continue
        size = int(header[2])
        blobs[sha] = data[pos:pos + size]
        pos += size + 1
    return blobs


def count(blob: bytes) -> int:
    """Lines as `wc -l` counts them (newline characters), which SOURCES.md's counts use."""
    return blob.count(b"\n")


def build(source: Source, git_dir: Path, corpus: Path, write: bool) -> dict:
    result = {"slug": source.slug, "repo": source.repo, "commit": source.commit, "mirror": str(git_dir),
              "ok": False, "problems": []}
    kind = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "-t", source.commit],
                          capture_output=True, text=True).stdout.strip()
    if kind != "commit":
        result["problems"].append(f"commit {source.commit} is not in the mirror {git_dir}")
        return result
    entries = [e for e in tree_entries(git_dir, source.commit) if kept(e[2], source)]
    all_paths = {e[2] for e in tree_entries(git_dir, source.commit)}
    for r in source.remove:  # a removal that matches nothing means SOURCES.md and the tree disagree
        if not any(p == r or (r.endswith("/") and p.startswith(r)) for p in all_paths):
            result["problems"].append(f"removal {r!r} matches no file of the commit")
    blobs = read_blobs(git_dir, sorted({sha for _, sha, _ in entries}))
    missing = [p for _, sha, p in entries if blobs[sha] is None]
    if missing:
        result["problems"].append(f"the mirror lacks blobs of {len(missing)} kept file(s): {missing[:5]}")
        return result
    py = [(p, blobs[sha]) for mode, sha, p in entries if p.endswith(".py") and mode != "120000"]
    result["files"], result["lines"] = len(py), sum(count(b) for _, b in py)
    result["extra"] = sorted(p for _, _, p in entries if not p.endswith(".py"))
    if source.files is not None and (result["files"], result["lines"]) != (source.files, source.lines):
        result["problems"].append(f"SOURCES.md states {source.files} files / {source.lines} lines, "
                                  f"the rebuilt tree has {result['files']} / {result['lines']}")
    if write:
        dest = corpus / source.slug
        tmp = corpus / f".{source.slug}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        for mode, sha, path in entries:
            target = tmp / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if mode == "120000":
                os.symlink(blobs[sha].decode(), target)
                continue
            target.write_bytes(blobs[sha])
            if mode == "100755":
                target.chmod(0o755)
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    result["ok"] = not result["problems"]
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirrors", type=Path, help="directory holding <owner>+<name>/repo git mirrors")
    ap.add_argument("--mirror", action="append", default=[], metavar="SLUG_OR_REPO=GITDIR",
                    help="git dir for one project (by slug) or repository (owner/name); repeatable")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--project", action="append", help="only these slugs (repeatable)")
    ap.add_argument("--check", action="store_true", help="extract in memory and verify; write nothing")
    ap.add_argument("--manifest", type=Path, help="write the per-project results as JSON here")
    args = ap.parse_args(argv)
    explicit = dict(m.split("=", 1) for m in args.mirror)
    slugs = sorted(p.parent.name for p in HERE.glob("*/SOURCES.md"))
    unknown = set(args.project or ()) - set(slugs)
    if unknown:
        raise SystemExit(f"no SOURCES.md for: {', '.join(sorted(unknown))}")
    stale = set(TABLE) - set(slugs)
    if stale:
        raise SystemExit(f"rebuild.py's table names unknown projects: {', '.join(sorted(stale))}")
    if not args.check:
        args.corpus.mkdir(parents=True, exist_ok=True)
    results = []
    for slug in slugs:
        if args.project and slug not in args.project:
            continue
        text = (HERE / slug / "SOURCES.md").read_text(encoding="utf-8")
        source = parse_sources(slug, text)
        problems = check_table(source, text)
        git_dir = find_mirror(source.repo, args.mirrors, explicit, slug)
        if git_dir is None:
            result = {"slug": slug, "repo": source.repo, "commit": source.commit, "ok": False,
                      "problems": [f"no mirror of {source.repo} found"]}
        else:
            result = build(source, git_dir, args.corpus, write=not args.check and not problems)
        result["problems"] = problems + result["problems"]
        result["ok"] = not result["problems"]
        results.append(result)
        stated = f"{source.files}/{source.lines}" if source.files is not None else "not stated"
        got = f"{result.get('files')}/{result.get('lines')}"
        print(f"{'ok  ' if result['ok'] else 'FAIL'} {slug:26} {source.commit[:12]} files/lines {got:>10}"
              f" (SOURCES.md {stated})" + "".join(f"\n     {p}" for p in result["problems"]))
    if args.manifest:
        args.manifest.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    failed = [r["slug"] for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)} of {len(results)} projects rebuilt and verified"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
