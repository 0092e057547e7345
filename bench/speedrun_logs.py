"""Reader of the speedrun's own training logs, to set a PyTorch run (a user's, or a published record
log they have) beside our curves:

- modded-nanogpt (records #3 onwards): validation lines
      step:N/M val_loss:X train_time:Yms[ step_avg:Zms]
  (training lines "step:N/M train_loss:... " or "step:N/M train_time:..." and the code printed at
  the top of the file are skipped);
- llm.c (the AdamW baseline, record #2): validation lines "s:N tel:X" (train-loss "s:N trl:X" and
  any other lines skipped).

Neither format records the tokens per step; the caller gives it (every record from #2 to #18 used
2^19 = 524288). read_log returns the validation points; a file with none, a malformed validation
line, or steps that go backwards (two runs in one file) stop with one line naming the file."""
import re

RECORD_TOKENS_PER_STEP = 524288

_NUM = r"([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|nan|inf)"
_MODDED = re.compile(r"step:([0-9]+)/([0-9]+) val_loss:" + _NUM + r" train_time:([0-9]+(?:\.[0-9]*)?)ms(?: |$)")
_LLMC = re.compile(r"s:([0-9]+) tel:" + _NUM + r"$")


class LogError(Exception):
    pass


def read_log(path, tokens_per_step=RECORD_TOKENS_PER_STEP):
    """Validation points of a modded-nanogpt or llm.c log.

    Returns {"format": "modded-nanogpt" | "llm.c", "points": [(step, tokens, val_loss,
    train_time_ms or None)], "last_step": int, "total_steps": int or None}."""
    if tokens_per_step <= 0:
        raise LogError("%s: tokens per step must be positive, not %s" % (path, tokens_per_step))
    fmt, points, total = None, [], None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise LogError("%s: cannot read (%s)" % (path, e.strerror))
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if line.startswith("step:") and " val_loss:" in line:
            m = _MODDED.match(line)
            kind = "modded-nanogpt"
            if not m:
                raise LogError("%s:%d: malformed validation line (want 'step:N/M val_loss:X train_time:Yms'): %.80s"
                               % (path, no, line))
            step, total, loss, ms = int(m.group(1)), int(m.group(2)), float(m.group(3)), float(m.group(4))
        elif line.startswith("s:") and " tel:" in line:
            m = _LLMC.match(line)
            kind = "llm.c"
            if not m:
                raise LogError("%s:%d: malformed validation line (want 's:N tel:X'): %.80s" % (path, no, line))
            step, loss, ms = int(m.group(1)), float(m.group(2)), None
        else:
            continue
        if fmt is None:
            fmt = kind
        elif kind != fmt:
            raise LogError("%s:%d: %s line in a %s log" % (path, no, kind, fmt))
        if points and step < points[-1][0]:
            raise LogError("%s:%d: step %d after step %d (several runs in one file?)" % (path, no, step, points[-1][0]))
        if loss != loss:
            raise LogError("%s:%d: validation loss is nan" % (path, no))
        points.append((step, step * tokens_per_step, loss, ms))
    if not points:
        raise LogError("%s: no validation lines ('step:N/M val_loss:X train_time:Yms' or 's:N tel:X')" % path)
    return {"format": fmt, "points": points, "last_step": points[-1][0], "total_steps": total}


def parse_overlay(spec):
    """LABEL=PATH[@TOKENS_PER_STEP] -> (label, path, tokens_per_step)."""
    label, sep, rest = spec.partition("=")
    if not sep or not label or not rest:
        raise LogError("--overlay: '%s' is not LABEL=PATH[@TOKENS_PER_STEP]" % spec)
    path, at, tps = rest.rpartition("@") if "@" in rest else (rest, "", "")
    if at:
        if not tps.isdigit() or int(tps) <= 0:
            raise LogError("--overlay: '%s': tokens per step '%s' is not a positive integer" % (spec, tps))
        return label, path, int(tps)
    return label, rest, RECORD_TOKENS_PER_STEP
