"""[workflows.<name>.policy] applies to that workflow's runs and checks, and to no other."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from keep_sdk.cli import cli

PRODUCER = """
export default Keep.workflow({
  name: "NAME",
  topics: { "mail.seen": {} },
  producers: {
    poll: {
      schedule: { interval: "5m" },
      handler: async (ctx, state) => {
        await ctx.gmail.search({ query: "a" });
        await ctx.gmail.search({ query: "b" });
        return {};
      },
    },
  },
});
"""

READS_IN_MUTATE = """
export default Keep.workflow({
  name: "NAME",
  topics: { "mail.seen": {} },
  consumers: {
    forward: Keep.consumer({
      subscribe: ["mail.seen"],
      async prepare(ctx, state) {
        const [seen] = await ctx.peek("mail.seen", { limit: 1 });
        if (!seen) return { reservations: [], data: {} };
        return { reservations: [{ topic: "mail.seen", ids: [seen.messageId] }], data: { id: seen.messageId } };
      },
      async mutate(ctx, prepared) {
        const mail = await ctx.gmail.getById({ id: prepared.data.id });
        await ctx.slack.postMessage({ channel: "#x", text: "seen" });
      },
      async next(ctx, prepared, mutationResult) {},
    }),
  },
});
"""

CONFIG = """
[workflows.tight.policy.sandbox]
max_host_calls = 1

[workflows.lenient.policy]
mutate_reads = "by_id"
"""


def run(tmp_path: Path, source: str, name: str) -> tuple[int, str]:
    config = tmp_path / "keep.toml"
    config.write_text(CONFIG)
    script = tmp_path / f"{name}.js"
    script.write_text(source.replace("NAME", name))
    done = CliRunner().invoke(
        cli,
        [
            "--config", str(config), "run", str(script),
            "--store", f"sqlite:///{tmp_path / 'keep.db'}",
            "--grant", "gmail.read", "--grant", "slack.write",
            "--until-idle", "--isolation", "in-process",
        ],
    )  # fmt: skip
    return done.exit_code, done.output + done.stderr


def test_a_sandbox_limit_override_applies_to_its_workflow_only(tmp_path: Path) -> None:
    code, output = run(tmp_path, PRODUCER, "tight")
    assert code == 1, output
    assert "host calls" in output or "max_host_calls" in output or "ctx calls" in output, output
    code, output = run(tmp_path, PRODUCER, "other")
    assert code == 0, output


def test_a_mutate_reads_override_decides_validation_of_its_workflow(tmp_path: Path) -> None:
    code, output = run(tmp_path, READS_IN_MUTATE, "strict")
    assert code == 1, output
    assert "nothing was deployed" in output
    code, output = run(tmp_path, READS_IN_MUTATE, "lenient")
    assert code == 0, output
