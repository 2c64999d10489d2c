"""The bench's results as JSON and as Markdown tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["screenshot_rows", "markdown", "write_results", "container_bench_ready"]

# Measured once on these machines, not in this bench: grim's 1920x1080 PNG of a real
# page (about 40 ms), and OSWorld's own in-VM server answering /screenshot under Xvfb
# (about 43 ms). They are the reference lines of the table, labelled as such.
GRIM_REFERENCE_MS = 40.0
OSWORLD_MS = 43.0

# name -> (label, what it measures, target as a multiple of grim's median, or None)
LIVE_ROWS = {
    "grim_png": ("grim PNG (baseline)", "`grim -t png -o OUT FILE`, default level 6: spawn, capture, encode, write to tmpfs", None),
    "grim_png_l1": ("grim PNG -l 1", "the same at `-l 1`", None),
    "grim_ppm": ("grim PPM (no encoding)", "`grim -t ppm`: what capture alone costs a separate process", None),
    "grim_jpeg": ("grim JPEG", "`grim -t jpeg` (quality 80)", None),
    "png_fresh": ("desktopd PNG, fresh", "GET /api/v1/screenshot?format=png after an action (pointer move): capture + convert + encode + HTTP; X-Deskbox-Cache: miss", 0.6),
    "jpeg_fresh": ("desktopd JPEG q85, fresh", "the same, format=jpeg", 0.25),
    "webp_fresh": ("desktopd WebP q80, fresh", "the same, format=webp", None),
    "png_cached": ("desktopd PNG, unchanged screen", "the same request again at once, screen still: X-Deskbox-Cache: hit", 0.1),
    "jpeg_cached": ("desktopd JPEG, unchanged screen", "the same, format=jpeg", 0.1),
    "webp_cached": ("desktopd WebP, unchanged screen", "the same, format=webp", 0.1),
    "step_capture": ("step: capture", "desktopd's capture code in the bench process: wlr-screencopy of the next frame into shm, copied out", None),
    "step_convert": ("step: convert", "Frame.to_image on an executor thread: BGRX to a Pillow RGB image", None),
    "step_png": ("step: encode PNG", "encode.py on an executor thread", None),
    "step_jpeg": ("step: encode JPEG q85", "encode.py on an executor thread", None),
    "click": ("click round trip", "POST /api/v1/pointer {action: click} until its reply", None),
    "click_seen": ("click until the page saw it", "POST sent until the page's click handler reported to the bench server", None),
    "click_in_desktopd": ("click inside desktopd", "desktopd's own `ms` in the reply (input work only)", None),
}
RSS_TARGET_MB = 80.0


def screenshot_rows(samples: dict) -> list[dict]:
    base = samples["grim_png"].summary()["median_ms"]
    rows = []
    for key, (label, what, target) in LIVE_ROWS.items():
        if key not in samples:
            continue
        s = samples[key].summary()
        ratio = None if (s["median_ms"] is None or not base or key.startswith("click")) else s["median_ms"] / base
        ref_ratio = None if (ratio is None or s["median_ms"] is None) else s["median_ms"] / GRIM_REFERENCE_MS
        if target is None:
            verdict = ref_verdict = None
        elif ratio is None:
            verdict = ref_verdict = "no data"
        else:
            verdict = "met" if ratio <= target else "missed"
            ref_verdict = "met" if ref_ratio <= target else "missed"
        rows.append({
            "key": key,
            "row": label,
            "measures": what,
            **s,
            "ratio_to_grim": None if ratio is None else round(ratio, 3),
            "ratio_to_grim_reference": None if ref_ratio is None else round(ref_ratio, 3),
            "target_ratio": target,
            "target": verdict,
            "target_vs_reference": ref_verdict,
            "samples_ms": [round(t * 1000, 3) for t in samples[key].times],
        })
    return rows


def _ms(v) -> str:
    return "-" if v is None else (f"{v:.1f}" if v >= 10 else f"{v:.2f}")


def _kb(v) -> str:
    return "-" if v is None else f"{v / 1024:.0f} KB"


def _verdict(v: str | None) -> str:
    return {"met": "met", "missed": "**missed**", None: "", "no data": "no data"}[v]


def markdown(result: dict) -> str:
    meta = result["meta"]
    grim = next((r for r in result["rows"] if r["key"] == "grim_png"), {})
    lines = [
        f"## desktopd screenshots and input, {meta['output']} ({meta['when']})",
        "",
        f"Baseline: `grim -t png` (default level 6) on the same output, in the same run, round robin with "
        f"every other row, {meta['iterations']} iterations per row. Page: {meta['page']}. "
        f"**x grim** = row median / grim's median here ({_ms(grim.get('median_ms'))} ms). "
        f"**x ref** = row median / the {GRIM_REFERENCE_MS:.0f} ms quoted for grim on these machines "
        f"(OSWorld's in-VM server: ~{OSWORLD_MS:.0f} ms per /screenshot); not measured here, but a stricter bar "
        f"when this page costs grim more than that. A target is met when the ratio is at most the target.",
        "",
        "| row | median ms | p95 ms | x grim | x ref | in desktopd ms | size | target | vs grim | vs ref |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for r in result["rows"]:
        target = "-" if r["target_ratio"] is None else f"<= {r['target_ratio']}x"
        ratio = "1.00" if r["key"] == "grim_png" else ("-" if r["ratio_to_grim"] is None else f"{r['ratio_to_grim']:.2f}")
        ref = "-" if r["ratio_to_grim_reference"] is None else f"{r['ratio_to_grim_reference']:.2f}"
        note = f" ({r['excluded']} excluded)" if r.get("excluded") else ""
        lines.append(
            f"| {r['row']}{note} | {_ms(r['median_ms'])} | {_ms(r['p95_ms'])} | {ratio} | {ref} "
            f"| {_ms(r.get('server_median_ms'))} | {_kb(r.get('bytes_median'))} "
            f"| {target} | {_verdict(r['target'])} | {_verdict(r['target_vs_reference'])} |"
        )
    rss = result["rss"]
    rss_verdict = "-" if rss.get("rss_mb") is None else _verdict("met" if rss["rss_mb"] <= RSS_TARGET_MB else "missed")
    start = result.get("rss_start", {})
    lines.append(
        f"| desktopd RSS after the run (at start {start.get('rss_mb')} MB, peak {rss.get('hwm_mb')} MB) "
        f"| {rss.get('rss_mb')} MB | | | | | | <= {RSS_TARGET_MB:.0f} MB | {rss_verdict} | |"
    )
    lines += ["", "What each row measures:", ""]
    for r in result["rows"]:
        lines.append(f"- **{r['row']}**: {r['measures']}.")
    lines.append(
        "- **in desktopd ms**: the median of desktopd's own time for the same requests (its log line per request, "
        "matched by X-Request-Id); the rest is HTTP over loopback and the client."
    )
    lines.append(
        "- **excluded**: requests whose X-Deskbox-Cache header was not the one the row measures (counted, not timed)."
    )
    lines.append(
        "- **desktopd RSS**: VmRSS of the desktopd process from /proc after every row above (peak: VmHWM); "
        "at start: right after `deskbox up` reported ready."
    )
    lines.append(f"- Load average before / after: {meta['loadavg_before']} / {meta['loadavg_after']} ({meta['cpus']} CPUs).")
    if result.get("encoders"):
        lines += [
            "",
            f"## Encoders on the same frame, in-process ({meta['encoder_iterations']} iterations, round robin)",
            "",
            "Each starts from what desktopd's encoder is handed: a Pillow RGB image converted from the "
            "compositor's BGRX frame. Array-based encoders include `np.asarray(image)`. "
            "**desktopd** marks what desktopd uses now.",
            "",
            "| step | encoder | median ms | p95 ms | size | check | desktopd |",
            "|---|---|---:|---:|---:|---|---|",
        ]
        for e in result["encoders"]:
            lines.append(
                f"| {e['section']} | {e['encoder']} | {_ms(e['median_ms'])} | {_ms(e['p95_ms'])} | {_kb(e['bytes'])} "
                f"| {e['check']} | {'yes' if e['chosen'] else ''} |"
            )
    return "\n".join(lines) + "\n"


def container_bench_ready(prog: str, image: str, build: bool) -> bool:
    """The checks of a bench that runs sessions in containers: it runs as root (podman),
    and the image is built first unless told not to. False (said) when it cannot run."""
    if os.geteuid() != 0:
        print(f"{prog}: run it as root (podman runs the sessions)", file=sys.stderr)
        return False
    if build:
        target = "image-apps" if image == "deskbox-apps" else "image"
        subprocess.run(["make", "-C", str(Path(__file__).resolve().parents[1]), target], check=True,
                       stdout=subprocess.DEVNULL)
    return True


def write_results(folder: Path, name: str, result: dict, md: str) -> None:
    """Write ``<name>.json`` and ``<name>.md`` into ``folder`` (made if missing) and print
    the Markdown table: what every bench leaves behind."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (folder / f"{name}.md").write_text(md)
    print(md)
