from __future__ import annotations

import json
from typing import Any

import pytest
from supervisor_helpers import NONCE, valid_config

from sandbox_supervisor.config import ConfigError, parse_config, read_nonce


@pytest.fixture
def config_dict() -> dict[str, Any]:
    return valid_config()


def test_valid_config_parses(config_dict: dict[str, Any]) -> None:
    config = parse_config(json.dumps(config_dict))
    assert config.nonce == NONCE
    assert config.expect.canary.syscall == 146
    assert config.argv[0] == "/usr/bin/python3"
    assert config.deadline_s == 30.0


def test_integer_deadline_is_accepted() -> None:
    assert parse_config(json.dumps(valid_config(deadline_s=5))).deadline_s == 5.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"v": 2}, "version"),
        ({"v": True}, "v must be"),
        ({"nonce": "ABC"}, "nonce"),
        ({"nonce": "0123456789ABCDEF0123456789ABCDEF"}, "nonce"),
        ({"runtime": "kata"}, "runtime"),
        ({"argv": []}, "argv"),
        ({"argv": ["ok", 3]}, "argv"),
        ({"argv": [""]}, "argv"),
        ({"cwd": "workspace"}, "cwd"),
        ({"workload_env": {"A=B": "x"}}, "variable name"),
        ({"workload_env": {"A": 1}}, "string"),
        ({"deadline_s": 0}, "deadline_s"),
        ({"deadline_s": True}, "deadline_s"),
        ({"kill_grace_s": -1}, "kill_grace_s"),
        ({"output_budget": -1}, "output_budget"),
        ({"output_budget": 1.5}, "output_budget"),
        ({"extra": 1}, "unknown keys"),
        ({"expect": {}}, "missing keys"),
    ],
)
def test_bad_values_are_refused(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(json.dumps(valid_config(**change)))


def test_missing_key_is_refused(config_dict: dict[str, Any]) -> None:
    del config_dict["cwd"]
    with pytest.raises(ConfigError, match=r"missing keys \['cwd'\]"):
        parse_config(json.dumps(config_dict))


def test_bad_expect_values_are_refused(config_dict: dict[str, Any]) -> None:
    config_dict["expect"]["canary"] = {"syscall": 146}
    with pytest.raises(ConfigError, match=r"expect\.canary"):
        parse_config(json.dumps(config_dict))
    config_dict["expect"]["canary"] = {"syscall": 146, "errno": 1}
    config_dict["expect"]["pids"] = 0
    with pytest.raises(ConfigError, match=r"expect\.pids"):
        parse_config(json.dumps(config_dict))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"v": 1, "v": 1}',
        '{"deadline_s": NaN}',
        "not json",
    ],
)
def test_malformed_json_is_refused(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_config(text)


def test_duplicate_key_is_refused(config_dict: dict[str, Any]) -> None:
    text = json.dumps(config_dict)[:-1] + ', "nonce": "' + "f" * 32 + '"}'
    with pytest.raises(ConfigError, match="duplicate key 'nonce'"):
        parse_config(text)


def test_read_nonce_only_when_well_formed() -> None:
    assert read_nonce(json.dumps({"nonce": NONCE, "junk": 1})) == NONCE
    assert read_nonce(json.dumps({"nonce": "short"})) is None
    assert read_nonce("[1]") is None
    assert read_nonce("{") is None
