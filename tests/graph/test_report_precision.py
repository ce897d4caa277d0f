"""report.html's precision section, from report.json data (pipeline/graph/report_precision.py)."""

from pipeline.graph.report_precision import precision_section


def layer(node, op, sqnr, drop, source=""):
    return {"node": node, "op": op, "sqnr_db": sqnr, "drop_db": drop, "source": source}


LAYERS = [layer("x", "input", 41.5, None), layer("conv2d", "conv2d", 38.0, 3.5, "m.py:9 (c(x))"),
          layer("add", "add", 61.2, -22.8), layer("sub", "sub", -0.1, 61.3, "m.py:11 (y -= 300)"),
          layer("linear", "linear", 15.1, -6.6), layer("clone", "clone", None, None)]


def report(layers, scheme="int8"):
    return {"models": {"net": {"quantize": {"scheme": scheme, "layers": layers}}}}


def test_the_largest_drop_comes_first_and_every_layer_folds_out_in_graph_order():
    text = precision_section({"u55": report(LAYERS)})
    worst = text.index("<table>")
    assert text.index(">sub<", worst) < text.index(">conv2d<", worst)  # 61.3 before 3.5
    assert "m.py:11 (y -= 300)" in text and "61.3" in text
    folded = text[text.index("<details>"):]
    assert "all 6 quantized tensors" in folded
    order = [folded.index(f">{n}<") for n in ("x", "conv2d", "add", "sub", "linear", "clone")]
    assert order == sorted(order)
    assert "exact" in folded  # no error at all: not a number


def test_targets_that_quantized_a_model_alike_share_one_table():
    text = precision_section({"u55": report(LAYERS), "u85": report(LAYERS),
                              "a16": report(LAYERS[:2], "a16w8")})
    assert text.count("<details>") == 2
    assert "(int8; u55, u85)" in text and "(a16w8; a16)" in text


def test_no_section_without_quantized_layers():
    assert precision_section({"vgf-fp": {"models": {"net": {"verify": {}}}}}) == ""
    assert precision_section({"old": report([])}) == ""


def test_the_build_report_page_carries_the_section(tmp_path):
    from pipeline.graph.report_html import render

    verify = {"passed": True, "outputs": [{"sqnr_db_vs_float": 15.1}]}
    entry = {"verify": verify, "quantize": {"scheme": "int8", "layers": LAYERS}}
    page = render({"m55-cpu": {"config": {"npu": None}, "models": {"net": entry}}}, tmp_path)
    assert "Precision per layer" in page and "y -= 300" in page
