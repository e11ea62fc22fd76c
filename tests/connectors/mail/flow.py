"""A workflow that sends a mail per request, and a runtime around the mail connector."""

from __future__ import annotations

from typing import Any

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.mail import MailSettings, build
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import Publication, Store
from tests.connectors.mcp.flow import POLICY

MAIL_FLOW = """
export default Keep.workflow({
  name: "mail-flow",
  topics: { "report.requested": {} },
  producers: {},
  consumers: {
    sendReport: Keep.consumer({
      subscribe: ["report.requested"],
      async prepare(ctx, state) {
        const [e] = await ctx.peek("report.requested", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        return {
          reservations: [{ topic: "report.requested", ids: [e.messageId] }],
          data: { to: e.payload.to, week: e.payload.week },
          ui: { title: `Send report for week ${e.payload.week}` },
        };
      },
      async mutate(ctx, prepared) {
        await ctx.mail.send({
          to: [prepared.data.to],
          subject: `Weekly report ${prepared.data.week}`,
          body: "All systems nominal.",
        });
      },
      async next(ctx, prepared, mutationResult) {
        return { last: mutationResult.status, messageId: mutationResult.result?.messageId };
      },
    }),
  },
});
"""


def mail_settings(port: int, sent: str, **options: Any) -> MailSettings:
    return MailSettings(
        from_address="keep@example.org",
        smtp_host="127.0.0.1",
        smtp_port=port,
        security="none",
        sent_maildir=sent,
        timeout_s=10.0,
        **options,
    )


def runtime(store: Store, settings: MailSettings) -> Runtime:
    return Runtime(
        store,
        ConnectorSet([build("mail", settings)]),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        policy=POLICY,
        isolation=InProcessIsolation(),
    )


def request_report(store: Store, message_id: str, to: str, week: int) -> None:
    store.publish(
        "mail-flow",
        Publication(
            topic="report.requested",
            message_id=message_id,
            title=f"Report {week}",
            payload={"to": to, "week": week},
        ),
    )
