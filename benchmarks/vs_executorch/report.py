"""The tables: per model and NPU (time, cycles, memory, NPU operator share, SQNR), both NPUs
together per model, the SQNR over many inputs, and the verdict of each goal."""

from __future__ import annotations

import math

from .figures import divide

# Goals this benchmark reports against.
GOAL_CYCLES_RATIO = 1.00  # our NPU cycles <= 1.00x theirs on every row
GOAL_NPU_SHARE = 1.0  # 100% of our operators on the NPU
GOAL_TIME_RATIO = 0.35  # our cold AOT time for both NPUs <= 0.35x theirs
GOAL_SQNR_MARGIN_DB = 0.1  # our SQNR (model's observer) >= theirs - 0.1 dB on every model


def fmt_num(value, spec: str = ",.0f") -> str:
    """``value`` formatted, ``n/a`` when missing, ``inf`` when infinite."""
    if value is None:
        return "n/a"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return format(value, spec)


def print_sqnr_table(rows: list[dict]) -> dict:
    """Per model: torch SQNR over the SQNR inputs, ours (the model's observer, then each
    observer asked for) and theirs, and the verdict of the SQNR goal."""
    models = {}
    for r in rows:
        models.setdefault(r["model"], r)
    observers = list(dict.fromkeys(o for r in models.values()
                                   for o in r["ours"]["sqnr_many_db"]))
    count = max((r["sqnr_inputs"] for r in models.values()), default=0)
    print()
    print(f"SQNR (dB) of the quantized graphs run by torch, vs float, over {count} inputs "
          "(ours: the model's observer, then each observer; theirs: ExecuTorch's quantizer; "
          "varying: the share of the output's power that changes with the input - near 0% the "
          "output is a constant and its SQNR says how that constant rounds)")
    head = (f"{'model':17} {'varying':>7} {'observer':>9} | {'ours':>6} | "
            + " ".join(f"{o:>9}" for o in observers) + f" | {'ET':>6} | {'ours-ET':>7}")
    print(head)
    print("-" * len(head))
    missed, deltas = [], {}
    for name, r in models.items():
        many, theirs = r["ours"]["sqnr_many_db"], r["theirs"]["sqnr_many_db"]
        mine = many.get(r["observer"])
        delta = None if mine is None or theirs is None else mine - theirs
        deltas[name] = delta
        if delta is None or delta < -GOAL_SQNR_MARGIN_DB:
            missed.append(f"{name} ({fmt_num(delta, '+.2f')} dB)")
        varying = r["ours"]["varying"]
        print(f"{name:17} {fmt_num(varying and 100 * varying, '6.1f'):>6}% "
              f"{r['observer']:>9} | {fmt_num(mine, '6.2f'):>6} | "
              + " ".join(f"{fmt_num(many.get(o), '9.2f'):>9}" for o in observers)
              + f" | {fmt_num(theirs, '6.2f'):>6} | {fmt_num(delta, '+7.2f'):>7}")
    goal = f"our SQNR >= theirs - {GOAL_SQNR_MARGIN_DB} dB on every model"
    state = "MET" if models and not missed else "MISSED"
    print(f"  {state:6} {goal}" + (f": missed on {', '.join(missed)}" if missed else ""))
    return {"deltas_db": deltas, "goal": {"met": state == "MET", "missed": missed}}


def print_table(rows: list[dict]) -> dict:
    """Print the per model x NPU table, the per-model both-NPU times and the goal verdicts."""
    _print_rows(rows)
    per_model, total_ratio = _print_both_npus(rows)
    verdicts = _print_goals(rows, per_model, total_ratio)
    return {"per_model": per_model, "total_time_ratio": total_ratio,
            "goals": {g: {"met": bool(rows) and not m, "missed": m} for g, m in verdicts.items()}}


def _print_rows(rows: list[dict]) -> None:
    head = (f"{'model':17} {'npu':13} | {'AOT s':>6} {'ET s':>6} | {'NPU cyc':>9} {'ET cyc':>9} "
            f"{'ratio':>5} {'tot.r':>5} | {'SRAM KiB':>8} {'ET SRAM':>8} | {'flash KiB':>9} "
            f"{'ET flash':>8} | {'NPU op':>6} {'ET op':>6} | {'SQNR tosa':>9} {'ET tosa':>7} "
            f"{'torch':>6} {'ET torch':>8}")
    print()
    print("per model x NPU (ours first, then ExecuTorch = ET; ratio = our NPU cycles / theirs, "
          "tot.r = total cycles ratio; SQNR in dB vs float)")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(_row_line(r))
        o, t = r["ours"], r["theirs"]
        for side, data in (("ours", o), ("ExecuTorch", t)):
            if data.get("error"):
                print(f"{'':31}^ {side}: {data['error'][:160]}")
        if t.get("non_delegated_ops"):
            print(f"{'':31}^ ExecuTorch left on the CPU: {', '.join(t['non_delegated_ops'])}")
        if t.get("delegates", 1) > 1:
            print(f"{'':31}^ ExecuTorch made {t['delegates']} delegates (figures summed)")


def _row_line(r: dict) -> str:
    o, t = r["ours"], r["theirs"]
    of, tf = o["figures"], t["figures"]
    return (f"{r['model']:17} {r['npu']:13} | {fmt_num(o['aot_s'], '6.1f'):>6} "
            f"{fmt_num(t['aot_s'], '6.1f'):>6} | {fmt_num(of.get('cycles_npu')):>9} "
            f"{fmt_num(tf.get('cycles_npu')):>9} "
            f"{fmt_num(divide(of.get('cycles_npu'), tf.get('cycles_npu')), '.2f'):>5} "
            f"{fmt_num(divide(of.get('cycles_total'), tf.get('cycles_total')), '.2f'):>5} | "
            f"{fmt_num(of.get('sram_memory_used'), '.1f'):>8} "
            f"{fmt_num(tf.get('sram_memory_used'), '.1f'):>8} | "
            f"{fmt_num(of.get('flash_kib'), '.1f'):>9} "
            f"{fmt_num(tf.get('flash_kib'), '.1f'):>8} | "
            f"{fmt_num(o['npu_share'] and 100 * o['npu_share'], '5.1f'):>5}% "
            f"{fmt_num(t['npu_share'] and 100 * t['npu_share'], '5.1f'):>5}% | "
            f"{fmt_num(o['sqnr_tosa_db'], '.2f'):>9} {fmt_num(t['sqnr_tosa_db'], '.2f'):>7} "
            f"{fmt_num(o['sqnr_torch_db'], '.2f'):>6} {fmt_num(t['sqnr_torch_db'], '.2f'):>8}")


def _print_both_npus(rows: list[dict]) -> tuple[dict, float | None]:
    """Both NPUs together, per model: our shared stages once + vela/package per NPU."""
    print()
    print("cold AOT time for both NPUs together (ours: export/quantize/lower/verify once, "
          "vela + package per NPU; theirs: the whole flow per NPU)")
    print(f"{'model':17} | {'ours s':>7} {'(shared':>8} {'per-NPU)':>9} | {'theirs s':>8} | "
          f"{'ours/theirs':>11}")
    sums = [0.0, 0.0]
    per_model = {}
    for m in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == m]
        shared = mine[0]["ours"]["shared_s"]
        shared_s = sum(shared.values()) if shared else None
        npu_s = [r["ours"]["npu_s"] for r in mine]
        theirs = [r["theirs"]["aot_s"] for r in mine]
        ours_total = None if shared_s is None or None in npu_s else shared_s + sum(npu_s)
        theirs_total = None if None in theirs else sum(theirs)
        ratio = divide(ours_total, theirs_total)
        per_model[m] = {"ours_s": ours_total, "theirs_s": theirs_total, "ratio": ratio,
                        "ours_stages_s": shared}
        if ours_total is not None and theirs_total is not None:
            sums[0] += ours_total
            sums[1] += theirs_total
        stages = " ".join(f"{k} {v:.1f}" for k, v in shared.items())
        print(f"{m:17} | {fmt_num(ours_total, '7.1f'):>7} {fmt_num(shared_s, '8.1f'):>8} "
              f"{fmt_num(sum(npu_s) if None not in npu_s else None, '9.1f'):>9} | "
              f"{fmt_num(theirs_total, '8.1f'):>8} | {fmt_num(ratio, '11.2f'):>11}   [{stages}]")
    total_ratio = divide(sums[0], sums[1])
    print(f"{'all models':17} | {sums[0]:7.1f} {'':8} {'':9} | {sums[1]:8.1f} | "
          f"{fmt_num(total_ratio, '11.2f'):>11}")
    return per_model, total_ratio


def _print_goals(rows: list[dict], per_model: dict, total_ratio) -> dict[str, list[str]]:
    """Goal -> where it was missed (empty: met), printed."""
    cycle_rows = [(r, divide(r["ours"]["figures"].get("cycles_npu"),
                             r["theirs"]["figures"].get("cycles_npu"))) for r in rows]
    cycles_missed = [
        f"{r['model']}/{r['npu']} ({fmt_num(x, '.3f')}"
        + (f"; theirs leaves {', '.join(r['theirs']['non_delegated_ops'])} on the CPU, "
           "outside its cycles)" if r["theirs"]["non_delegated_ops"] else ")")
        for r, x in cycle_rows if x is None or x > GOAL_CYCLES_RATIO]
    share_missed = [f"{r['model']}/{r['npu']}" for r in rows
                    if r["ours"]["npu_share"] is None or r["ours"]["npu_share"] < GOAL_NPU_SHARE]
    time_missed = [f"{m} ({fmt_num(v['ratio'], '.2f')})" for m, v in per_model.items()
                   if v["ratio"] is None or v["ratio"] > GOAL_TIME_RATIO]
    print()
    print("goals")
    verdicts = {
        f"our NPU cycles <= {GOAL_CYCLES_RATIO:.2f}x theirs on every row": cycles_missed,
        "100% of our operators on the NPU": share_missed,
        f"our cold AOT time, both NPUs, <= {GOAL_TIME_RATIO:.2f}x theirs (per model)": time_missed,
    }
    for goal, missed in verdicts.items():
        state = "MET" if rows and not missed else "MISSED"
        print(f"  {state:6} {goal}" + (f": missed on {', '.join(missed)}" if missed else ""))
    print(f"         (all models together: ours/theirs time = {fmt_num(total_ratio, '.2f')})")
    return verdicts
