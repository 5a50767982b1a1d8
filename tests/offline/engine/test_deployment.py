"""offline/engine/deployment.py: the operations (``pulumi up --refresh`` and its preview).
"""

from __future__ import annotations

from offline import engine

T_A = "pkgA:m:typA"


def test_preview_with_refresh_hands_the_program_what_was_read():
    """RefreshStep.Apply reads in a preview too, and rebuildBaseState hands the refreshed outputs on: the program of
    `pulumi preview --refresh` sees the same outputs as that of `pulumi up --refresh`."""
    offline = engine.Engine({"pkgA": engine.Provider(read=lambda old: {**old.outputs, "ip": "10.0.0.5"})})
    seen = []

    def program(monitor):
        seen.append(monitor.register(T_A, "a", inputs={"k": "1"}).outputs.get("ip"))

    first = offline.update(program)
    seen.clear()
    offline.update(program, first.snapshot, preview=True, refresh=True)
    offline.update(program, first.snapshot, refresh=True)
    assert seen == ["10.0.0.5", "10.0.0.5"]
