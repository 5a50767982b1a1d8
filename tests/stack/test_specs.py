"""stack/specs.py: the shared Kubernetes spec of the private-link NetworkPolicy."""

from __future__ import annotations

import pytest


def test_private_link_policy_spec_takes_each_address_as_one_host():
    from stack.specs import private_link_policy_spec

    spec = private_link_policy_spec(["10.1.2.3", "10.1.2.4", "fd00::5"])
    assert [peer["ipBlock"]["cidr"] for peer in spec["ingress"][0]["from"]] == ["10.1.2.3/32", "10.1.2.4/32",
                                                                                "fd00::5/128"]
    with pytest.raises(ValueError):
        private_link_policy_spec(["10.1.2.0/24x"])
