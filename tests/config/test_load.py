"""load_config: the file as a whole, defaults/extends resolution, error reporting
(pipeline/config/load.py)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from pipeline.config import ProjectConfig, load_config
from pipeline.config.load import MAX_EXTENDS, MAX_FILE_BYTES, MAX_RESOLVED_VALUES
from pipeline.errors import ConfigError

FIXTURES = Path(__file__).parent / "fixtures"

MODELS = """\
models:
  add:
    source: models/add.py:AddModel
    inputs:
      - {shape: [1, 8, 8, 16]}
  cnn:
    source: models/cnn.py:SmallCNN
    inputs: models/cnn.py:example_inputs
"""


def test_fixture_file_loads_the_shipped_targets():
    config = load_config(FIXTURES / "targets.yaml")
    assert isinstance(config, ProjectConfig)
    assert config.path == (FIXTURES / "targets.yaml").absolute()
    assert list(config.targets) == ["u85-linux", "u55-baremetal", "u85-baremetal", "tosa-ref"]
    assert list(config.models) == ["add", "cnn"]
    linux = config.targets["u85-linux"]
    assert (linux.cpu, linux.platform, linux.toolchain) == ("cortex-a55", "linux",
                                                             "aarch64-linux-gnu-gcc")
    assert (linux.npu.cop_format, linux.npu.separate_io_regions) == ("COP2", True)
    assert config.targets["u55-baremetal"].npu.memory_mode == "Shared_Sram"
    assert config.targets["tosa-ref"].npu is None
    add = config.models["add"]
    assert add.source_path == FIXTURES / "models" / "add.py"
    assert add.source_attr == "AddModel"
    assert [s.shape for s in add.input_specs] == [(1, 8, 8, 16), (1, 8, 8, 16)]


def test_relative_and_absolute_paths_in_messages(project):
    (project / "targets.yaml").write_text("models: {}\ntargets: {}\n")
    expected = ["models: must define at least one model; got none",
                "targets: must define at least one target; got none"]
    with pytest.raises(ConfigError) as relative:
        load_config(Path("targets.yaml"))
    assert relative.value.issues == [f"targets.yaml:{i}: {m}" for i, m in enumerate(expected, 1)]
    with pytest.raises(ConfigError) as absolute:
        load_config(project / "targets.yaml")
    assert absolute.value.issues[0].startswith(f"{project / 'targets.yaml'}:1: ")


def test_paths_resolve_against_the_yaml_folder_not_the_cwd(project, tmp_path_factory,
                                                          monkeypatch):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)
    (project / "targets.yaml").write_text(MODELS + "targets:\n"
                                          "  t: {cpu: host, npu: null, models: [add]}\n")
    config = load_config(project / "targets.yaml")
    assert config.models["cnn"].input_factory.path == project / "models" / "cnn.py"


def test_model_source_outside_the_project(project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    shutil.copy(project / "models" / "add.py", outside / "net.py")
    config_text = (f"models:\n  m: {{source: {outside / 'net.py'}:AddModel, "
                   f"inputs: [{{shape: [4]}}]}}\ntargets:\n"
                   "  t: {cpu: host, npu: null, models: [m]}\n")
    (project / "targets.yaml").write_text(config_text)
    assert load_config(Path("targets.yaml")).models["m"].source_path == outside / "net.py"


NAME_RULE = "a name of letters, digits, '-' and '_', starting with a letter or digit"

RESOLUTION = MODELS + """\
defaults:
  models: [add]
  build_type: Debug
  npu:
    config: ethos-u85-256
    optimise: Size
targets:
  base:
    cpu: cortex-m85
    description: base
  child:
    extends: base
    npu: {memory_mode: Shared_Sram}
    models: [cnn]
  grandchild:
    extends: child
    cpu: cortex-m55
    isa: dsp
  linux:
    extends: child
    cpu: cortex-a55
  plain:
    cpu: host
    npu: null
"""


def test_defaults_and_extends_resolve_in_order(load):
    targets = load(RESOLUTION).targets
    assert targets["base"].npu.optimise == "Size"  # from defaults
    assert targets["base"].npu.memory_mode == "Sram_Only"  # the U85 default
    assert targets["base"].build_type == "Debug"
    assert targets["child"].npu.memory_mode == "Shared_Sram"  # mapping merged key by key
    assert targets["child"].npu.optimise == "Size"
    assert targets["child"].models == ("cnn",)  # a list replaces
    assert targets["child"].description == "base"
    grandchild = targets["grandchild"]
    assert (grandchild.cpu, grandchild.isa, grandchild.npu.memory_mode) == ("cortex-m55", "dsp",
                                                                            "Shared_Sram")
    linux = targets["linux"]  # cpu-derived defaults follow the resolved cpu, not the parent's
    assert (linux.platform, linux.npu.cop_format, linux.npu.separate_io_regions) == (
        "linux", "COP2", True)
    assert targets["plain"].npu is None  # null replaces the inherited mapping


@pytest.mark.parametrize(("targets", "expected"), [
    pytest.param("  a: {extends: a, cpu: host}\n", [
        "targets.yaml:10: targets.a.extends: must not form a cycle; got a -> a"], id="self"),
    pytest.param("  a: {extends: b, cpu: host}\n  b: {extends: c}\n  c: {extends: a}\n", [
        "targets.yaml:10: targets.a.extends: must not form a cycle; got a -> b -> c -> a"],
        id="three-cycle-reported-once"),
    pytest.param("  a: {cpu: host}\n  b: {extends: c}\n  c: {extends: b}\n  d: {extends: b}\n", [
        "targets.yaml:11: targets.b.extends: must not form a cycle; got b -> c -> b"],
        id="entering-a-cycle"),
    pytest.param("  a: {cpu: host}\n  b: {extends: aa, cpu: host}\n", [
        "targets.yaml:11: targets.b.extends: unknown target 'aa'; did you mean 'a'?"],
        id="unknown-parent"),
    pytest.param("  a: {cpu: host}\n  b: {extends: zzz, cpu: host}\n", [
        "targets.yaml:11: targets.b.extends: unknown target 'zzz'; must be one of a"],
        id="unknown-parent-no-match"),
    pytest.param("  a: {cpu: host}\n  b: {extends: [a], cpu: host}\n", [
        "targets.yaml:11: targets.b.extends: must be the name of another target; got ['a']"],
        id="extends-not-a-name"),
    pytest.param("  a: null\n  b: {extends: a, cpu: host}\n", [
        "targets.yaml:10: targets.a: must be a mapping; got null"], id="parent-not-a-mapping"),
])
def test_extends_problems(issues, targets, expected):
    assert issues(MODELS + "targets:\n" + targets.replace("cpu: host", "cpu: host, npu: null, "
                                                          "models: [add]")) == expected


def test_inherited_problem_is_reported_where_written_with_the_targets(issues):
    text = MODELS + """\
defaults:
  models: [add]
  npu: {config: ethos-u85-256, cop_format: COP1}
targets:
  m55: {cpu: cortex-m55}
  a55: {cpu: cortex-a55}
  a76: {cpu: cortex-a76}
  m4:
    extends: m55
    cpu: cortex-m4
  m4b:
    extends: m4
    isa: scalar
"""
    assert issues(text) == [
        ("targets.yaml:11: defaults.npu.cop_format (for targets.a55): must be COP2 for cortex-a55 "
        "(Linux direct drive only accepts COP2); got 'COP1'"),
        ("targets.yaml:11: defaults.npu.cop_format (for targets.a76): must be COP2 for cortex-a76 "
        "(Linux direct drive only accepts COP2); got 'COP1'"),
        ("targets.yaml:21: targets.m4b.isa: must be dsp for cortex-m4 (the DSP extension is "
        "always part of cortex-m4); got 'scalar'"),
    ]


def test_field_error_in_defaults_is_reported_once(issues):
    text = MODELS + "defaults:\n  build_type: Fast\n  models: [add]\n" \
        "targets:\n  a: {cpu: host, npu: null}\n  b: {cpu: host, npu: null}\n"
    assert issues(text) == [("targets.yaml:10: defaults.build_type: must be one of Release, "
                            "Debug, RelWithDebInfo, MinSizeRel; got 'Fast'")]


def test_missing_field_of_an_inherited_mapping_names_the_target(issues):
    text = MODELS + "defaults:\n  npu: {optimise: Size}\n  models: [add]\n" \
        "targets:\n  a: {cpu: cortex-m55}\n  b: {cpu: cortex-m55, npu: {config: ethos-u55-64}}\n"
    assert issues(text) == [
        "targets.yaml:10: defaults.npu.config (for targets.a): must be set; got nothing"]


def test_extends_in_defaults_is_refused(issues):
    text = MODELS + "defaults:\n  extends: a\ntargets:\n" \
        "  a: {cpu: host, npu: null, models: [add]}\n"
    assert issues(text) == [
        ("targets.yaml:10: defaults.extends: must be written in a target, not in defaults "
        "(defaults apply to every target); got 'a'")]


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("", [("targets.yaml:1: must be a mapping with keys models and targets; "
                      "got an empty file")], id="empty"),
    pytest.param("- a\n", [("targets.yaml:1: must be a mapping with keys models and targets; "
                           "got ['a']")], id="list"),
    pytest.param("targets:\n  t: {cpu: host, npu: null, models: [add]}\n", [
        "targets.yaml:1: models: must be set; got nothing",
        "targets.yaml:2: targets.t.models[0]: unknown model 'add'; no model is defined"],
        id="no-models"),
    pytest.param(MODELS + "target:\n  t: {cpu: host, npu: null}\n", [
        "targets.yaml:1: targets: must be set; got nothing",
        "targets.yaml:9: target: unknown field; did you mean 'targets'?"], id="misspelt-top"),
    pytest.param(MODELS + "targets: [a]\n", [
        "targets.yaml:9: targets: must be a mapping of target names to targets; got ['a']"],
        id="targets-list"),
    pytest.param(MODELS + "defaults: [cpu]\ntargets:\n"
                 "  t: {cpu: host, npu: null, models: [add]}\n", [
        "targets.yaml:9: defaults: must be a mapping of target fields; got ['cpu']"],
        id="defaults-list"),
    pytest.param(MODELS + "targets:\n", [
        "targets.yaml:9: targets: must be a mapping of target names to targets; got null"],
        id="targets-null"),
    pytest.param(MODELS + "targets:\n  u85 linux: {cpu: host, npu: null, models: [add]}\n", [
        ("targets.yaml:10: targets.u85 linux: must be a name of letters, digits, '-' and '_', "
        "starting with a letter or digit; got 'u85 linux'")], id="bad-target-name"),
    pytest.param(MODELS + "targets:\n  t: {cpu: host, npu: null, models: [ad, add, add]}\n", [
        "targets.yaml:10: targets.t.models[0]: unknown model 'ad'; did you mean 'add'?",
        "targets.yaml:10: targets.t.models[2]: must name each model once; got 'add' again"],
        id="model-names"),
    pytest.param(MODELS + "targets:\n  t: {cpu: host, npu: null, models: []}\n", [
        "targets.yaml:10: targets.t.models: must have at least 1 item; got []"],
        id="no-models-in-target"),
])
def test_file_level_problems(issues, text, expected):
    assert issues(text) == expected


def test_empty_defaults_is_fine(load):
    text = MODELS + "defaults:\ntargets:\n  t: {cpu: host, npu: null, models: [add]}\n"
    assert list(load(text).targets) == ["t"]


def test_every_problem_at_once_sorted_by_line(issues):
    text = """\
models:
  add:
    source: models/ad.py:AddModel
    inputs: [{shape: [1, 0]}]
targets:
  u85-linux:
    cpu: cortex-a55
    npu:
      config: ethos-u85-300
      sytem_config: Ethos_U85_SYS_DRAM_Mid
    models: [add]
  m:
    cpu: cortex-m4
    isa: mve
    models: [addd]
    npu: null
"""
    assert issues(text) == [
        ("targets.yaml:3: models.add.source: must name an existing file; got "
        f"'models/ad.py:AddModel' ({Path.cwd() / 'models' / 'ad.py'} does not exist)"),
        "targets.yaml:4: models.add.inputs[0].shape[1]: must be > 0; got 0",
        ("targets.yaml:9: targets.u85-linux.npu.config: must be one of ethos-u55-32, "
        "ethos-u55-64, ethos-u55-128, ethos-u55-256, ethos-u65-256, ethos-u65-512, "
        "ethos-u85-128, ethos-u85-256, ethos-u85-512, ethos-u85-1024, ethos-u85-2048; "
        "got 'ethos-u85-300'"),
        ("targets.yaml:10: targets.u85-linux.npu.sytem_config: unknown field; "
        "did you mean 'system_config'?"),
        ("targets.yaml:14: targets.m.isa: must be dsp for cortex-m4 (the DSP extension is always "
        "part of cortex-m4); got 'mve'"),
        "targets.yaml:15: targets.m.models[0]: unknown model 'addd'; did you mean 'add'?",
    ]


def test_yaml_syntax_error_is_a_file_line_issue(issues):
    assert issues("models:\n  add: [1\ntargets: {}\n") == [
        ("targets.yaml:3: invalid YAML: expected ',' or ']', but got ':' "
        "(while parsing a flow sequence at line 2)")]


def test_duplicate_key_is_an_issue(issues):
    text = MODELS + "targets:\n  t:\n    cpu: host\n    cpu: cortex-m55\n    models: [add]\n" \
        "    npu: null\n"
    assert issues(text) == [("targets.yaml:12: targets.t.cpu: duplicate key; first written at "
                            "line 11")]


def test_missing_file(project):
    with pytest.raises(ConfigError) as caught:
        load_config(Path("nope.yaml"))
    assert caught.value.issues == [
        f"nope.yaml: must be an existing file; got nothing at {project / 'nope.yaml'}"]


def test_error_message_counts_problems(issues, load):
    with pytest.raises(ConfigError, match=r"^2 problems in the configuration:\n"):
        load("models: {}\ntargets: {}\n")


def test_yaml_anchors_and_merge_keys(load):
    text = MODELS + """\
targets:
  base: &base {cpu: cortex-m55, models: [add], npu: {config: ethos-u55-128}}
  copy:
    <<: *base
    cpu: cortex-m33
"""
    targets = load(text).targets
    assert (targets["copy"].cpu, targets["copy"].npu.config) == ("cortex-m33", "ethos-u55-128")


def test_dumped_config_validates_again():
    config = load_config(FIXTURES / "targets.yaml")
    for target in config.targets.values():
        dumped = target.model_dump(mode="json")
        assert dumped["tosa"] == str(target.tosa)  # the canonical spec string
        context = {"model_names": ("add", "cnn")}
        assert type(target).model_validate(dumped, context=context) == target
    for model in config.models.values():
        dumped = model.model_dump(mode="json")
        assert dumped["source"] == f"{model.source_path}:{model.source_attr}"
        assert type(model).model_validate(dumped) == model


NPU_HINT = ("must be set (an npu block, or null for no NPU: the TOSA graph is then verified "
            "on the host); got nothing")


def test_npu_is_required(issues):
    text = MODELS + "targets:\n  t: {cpu: host, models: [add]}\n"
    assert issues(text) == [f"targets.yaml:10: targets.t.npu: {NPU_HINT}"]


@pytest.mark.parametrize("targets", [
    pytest.param("  t: {cpu: host, npu: null, models: [add]}\n", id="null-in-the-target"),
    pytest.param("  base: {cpu: host, npu: null, models: [add]}\n  t: {extends: base}\n",
                 id="from-an-extends-base"),
    pytest.param("  t: {cpu: host, models: [add]}\ndefaults: {npu: null}\n", id="from-defaults"),
])
def test_npu_may_be_null_and_inherited(load, targets):
    assert load(MODELS + "targets:\n" + targets).targets["t"].npu is None


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(MODELS + 'targets:\n  "t\\n": {cpu: host, npu: null, models: [add]}\n', [
        (f"targets.yaml:10: targets.'t\\n': must be {NAME_RULE}; got 't\\n'")],
        id="target-name"),
    pytest.param(MODELS.replace("  add:", '  "add\\n":') + 'targets:\n  t: {cpu: host, '
                 'npu: null, models: ["add\\n"]}\n', [
        f"targets.yaml:2: models.'add\\n': must be {NAME_RULE}; got 'add\\n'"], id="model-name"),
])
def test_names_ending_in_a_newline_are_refused(issues, text, expected):
    # `$` matches before a final newline: "t\n" once made a folder build/t<newline>/.
    assert issues(text) == expected


def test_keys_with_control_characters_are_escaped(issues):
    text = MODELS + 'targets:\n  t: {cpu: host, npu: null, models: [add], "np\\nu\\x1b": 1}\n'
    assert issues(text) == [
        "targets.yaml:10: targets.t.'np\\nu\\x1b': unknown field; did you mean 'npu'?"]


def test_bytes_that_are_not_utf8_are_reported_by_line_and_column(project):
    text = (MODELS + "targets:\n  t: {cpu: host, npu: null, models: [add]}\n").encode()
    at = text.index(b"cpu")
    (project / "targets.yaml").write_bytes(text[:at] + "é".encode() + b"\xff" + text[at:])
    with pytest.raises(ConfigError) as caught:
        load_config(Path("targets.yaml"))
    assert caught.value.issues == [
        "targets.yaml:10: must be UTF-8 text; got byte 0xff at column 8 (invalid start byte)"]


def test_a_huge_file_is_refused_unread(project):
    (project / "targets.yaml").write_text("# " + "x" * MAX_FILE_BYTES + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(Path("targets.yaml"))
    assert caught.value.issues == [
        f"targets.yaml: must be at most {MAX_FILE_BYTES} bytes; got more"]


@pytest.mark.parametrize(("name", "reason"), [
    ("a" * 300 + ".yaml", "File name too long: a name in it has 305 bytes, over the system's 255"),
    ("d/" * 2100 + "t.yaml", "File name too long: it has "),
], ids=["name-over-255-bytes", "path-over-4096-bytes"])
def test_a_targets_path_the_system_refuses(project, name, reason):
    with pytest.raises(ConfigError) as caught:
        load_config(Path(name))
    assert caught.value.issues[0].startswith(f"{name}: must be a readable file; got {reason}")


def test_a_long_extends_chain_is_reported_once_and_fast(issues):
    count = 2000
    chain = "".join(f"  t{i}: {{extends: t{i + 1}}}\n" for i in range(count))
    text = MODELS + "targets:\n" + chain + f"  t{count}: {{cpu: host, npu: null, models: [add]}}\n"
    start = time.perf_counter()
    found = issues(text)
    assert time.perf_counter() - start < 30.0  # a hang guard, not a speed target (a loaded CI
    # machine may be slow); resolving it recursively used to end in RecursionError or minutes
    assert found == [f"targets.yaml:10: targets.t0.extends: must lead through at most "
                     f"{MAX_EXTENDS} targets (an extends chain); got t0 -> t1 -> t2 -> … -> "
                     "t31 -> t32 -> …"]


def test_a_chain_at_the_cap_resolves(load):
    chain = "".join(f"  t{i}: {{extends: t{i + 1}}}\n" for i in range(MAX_EXTENDS - 1))
    text = MODELS + "targets:\n" + chain + (f"  t{MAX_EXTENDS - 1}: {{cpu: host, npu: null, "
                                            "models: [add]}\n")
    assert load(text).targets["t0"].cpu == "host"


def test_a_long_cycle_is_still_reported(issues):
    cycle = "".join(f"  t{i}: {{extends: t{(i + 1) % 100}}}\n" for i in range(100))
    assert issues(MODELS + "targets:\n" + cycle) == [
        f"targets.yaml:10: targets.t0.extends: must lead through at most {MAX_EXTENDS} targets "
        "(an extends chain); got t0 -> t1 -> t2 -> … -> t31 -> t32 -> …"]


def test_defaults_times_targets_is_bounded(issues):
    models = "models:\n" + "".join(f"  m{i}: {{source: models/add.py:AddModel, inputs: "
                                    "[{shape: [1]}]}\n" for i in range(400))
    names = ", ".join(f"m{i}" for i in range(400))
    targets = "".join(f"  t{i}: {{}}\n" for i in range(300))
    text = models + f"defaults: {{cpu: host, npu: null, models: [{names}]}}\ntargets:\n" + targets
    # 404 values a target (itself, cpu, npu, the list and its 400 names): t247 is one too many.
    assert issues(text) == [
        (f"targets.yaml:651: targets.t247: targets must resolve to at most {MAX_RESOLVED_VALUES} "
         "values in all (defaults: and extends: are copied into each); got 100192 with this one")]


def test_thousands_of_aliases_of_a_long_unknown_name_are_reported_quickly(issues):
    """5,000 YAML aliases of a 400 KB string in a ``models:`` list: each is one line (the
    did-you-mean is skipped for such a name; difflib took 74 s per 1,000 of them)."""
    long_name = "m" * 400_000
    text = (MODELS + "targets:\n  t:\n    cpu: host\n    npu: null\n"
            f"    models: [&a {long_name}" + ", *a" * 4999 + "]\n")
    started = time.perf_counter()
    found = issues(text)
    assert time.perf_counter() - started < 20
    assert len(found) == 5000
    assert found[0] == (f"targets.yaml:13: targets.t.models[0]: unknown model '{'m' * 99}… "
                        "(400002 characters); must be one of add, cnn")


def test_a_short_misspelt_model_still_gets_a_did_you_mean(issues):
    text = MODELS + "targets:\n  t: {cpu: host, npu: null, models: [cnm]}\n"
    assert issues(text) == [("targets.yaml:10: targets.t.models[0]: unknown model 'cnm'; "
                             "did you mean 'cnn'?")]
