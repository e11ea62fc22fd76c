"""A workflow over all four configured connector types, and the keep.toml that declares them.

One order goes through four consumers chained by topics, each with one mutation: an MCP
tool (``notes.addNote``), a SQL insert (``orders.recordOrder``), an HTTP POST
(``crm.addNote``) and a mail send (``mail.send``). The producer reads the customer over
HTTP (``crm.getContact``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

WORKFLOW = "fulfil"
GRANTS = ("crm.read", "crm.write", "notes.write", "orders.write", "mail.send")
CONSUMERS = ("openTicket", "recordOrder", "noteCrm", "mailCustomer")
ORDERS_TABLE = "CREATE TABLE orders (id TEXT, ticket TEXT, idem_key TEXT)"
"""No unique constraint on purpose: a second insert with one key would show as a row."""

SOURCE = """
export default Keep.workflow({
  name: "fulfil",
  topics: {
    "order.placed": {}, "ticket.opened": {}, "order.recorded": {}, "crm.noted": {},
  },
  producers: {
    poll: {
      schedule: { interval: "1h" },
      handler: async (ctx, state) => {
        const contact = await ctx.crm.getContact({ id: "c1" });
        await ctx.publish("order.placed", {
          messageId: "o1",
          title: `Order o1 for ${contact.name}`,
          payload: { id: "o1", name: contact.name, email: contact.email },
        });
        return {};
      },
    },
  },
  consumers: {
    openTicket: Keep.consumer({
      subscribe: ["order.placed"],
      publishes: ["ticket.opened"],
      async prepare(ctx, state) {
        const [e] = await ctx.peek("order.placed", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        return { reservations: [{ topic: "order.placed", ids: [e.messageId] }], data: e.payload };
      },
      async mutate(ctx, prepared) {
        await ctx.notes.addNote({ text: `ship ${prepared.data.id} to ${prepared.data.name}` });
      },
      async next(ctx, prepared, mutationResult) {
        if (mutationResult.status === "applied") {
          await ctx.publish("ticket.opened", {
            messageId: `ticket:${prepared.data.id}`,
            title: `Ticket ${mutationResult.result.id}`,
            payload: { ...prepared.data, ticket: mutationResult.result.id },
          });
        }
        return {};
      },
    }),
    recordOrder: Keep.consumer({
      subscribe: ["ticket.opened"],
      publishes: ["order.recorded"],
      async prepare(ctx, state) {
        const [e] = await ctx.peek("ticket.opened", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        return { reservations: [{ topic: "ticket.opened", ids: [e.messageId] }], data: e.payload };
      },
      async mutate(ctx, prepared) {
        await ctx.orders.recordOrder({ id: prepared.data.id, ticket: prepared.data.ticket });
      },
      async next(ctx, prepared, mutationResult) {
        if (mutationResult.status === "applied") {
          await ctx.publish("order.recorded", {
            messageId: `recorded:${prepared.data.id}`,
            title: `Order ${prepared.data.id} recorded`,
            payload: prepared.data,
          });
        }
        return {};
      },
    }),
    noteCrm: Keep.consumer({
      subscribe: ["order.recorded"],
      publishes: ["crm.noted"],
      async prepare(ctx, state) {
        const [e] = await ctx.peek("order.recorded", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        return { reservations: [{ topic: "order.recorded", ids: [e.messageId] }], data: e.payload };
      },
      async mutate(ctx, prepared) {
        const { id, ticket } = prepared.data;
        await ctx.crm.addNote({ text: `order ${id}: ticket ${ticket}` });
      },
      async next(ctx, prepared, mutationResult) {
        if (mutationResult.status === "applied") {
          await ctx.publish("crm.noted", {
            messageId: `noted:${prepared.data.id}`,
            title: `CRM note ${mutationResult.result.noteId}`,
            payload: prepared.data,
          });
        }
        return {};
      },
    }),
    mailCustomer: Keep.consumer({
      subscribe: ["crm.noted"],
      async prepare(ctx, state) {
        const [e] = await ctx.peek("crm.noted", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        return { reservations: [{ topic: "crm.noted", ids: [e.messageId] }], data: e.payload };
      },
      async mutate(ctx, prepared) {
        await ctx.mail.send({
          to: [prepared.data.email],
          subject: `Your order ${prepared.data.id}`,
          body: `Ticket ${prepared.data.ticket} tracks your order.`,
        });
      },
      async next(ctx, prepared, mutationResult) {
        return {};
      },
    }),
  },
});
"""


@dataclass(frozen=True)
class Services:
    """Where the four external systems listen or live."""

    mcp_url: str
    http_url: str
    sql_url: str
    smtp_port: int
    sent: Path


def keep_toml(services: Services) -> str:
    """The keep.toml declaring the four connectors; the CRM token is ``${CRM_TOKEN}``."""
    fast = "{ base_s = 0.01, cap_s = 0.01, jitter = 0.0 }"
    return f"""
[policy]
backoff = {fast}
reconcile_backoff = {fast}
mutation_timeout_s = 20

[connectors.notes]
type = "mcp"
url = "{services.mcp_url}"
reconcile_tool = "find_by_key"
call_timeout_s = 10

[connectors.crm]
type = "http"
base_url = "{services.http_url}"
headers = {{ Authorization = "Bearer ${{CRM_TOKEN}}" }}

[connectors.crm.operations.getContact]
kind = "read_by_id"
path = "/contacts/{{id}}"
arguments = {{ properties = {{ id = {{ type = "string" }} }}, required = ["id"] }}

[connectors.crm.operations.addNote]
kind = "mutation"
method = "POST"
path = "/notes"
arguments = {{ properties = {{ text = {{ type = "string" }} }}, required = ["text"] }}
reconcile = {{ path = "/notes/by-key/{{idempotencyKey}}" }}

[connectors.orders]
type = "sql"
url = "{services.sql_url}"

[connectors.orders.operations.recordOrder]
kind = "mutation"
sql = "INSERT INTO orders (id, ticket, idem_key) VALUES (:id, :ticket, :idempotency_key)"
reconcile = "orderByKey"

[connectors.orders.operations.recordOrder.arguments]
properties = {{ id = {{ type = "string" }}, ticket = {{ type = "string" }} }}
required = ["id", "ticket"]

[connectors.orders.lookups.orderByKey]
sql = "SELECT id, ticket FROM orders WHERE idem_key = :idempotency_key"

[connectors.mail]
type = "mail"
from_address = "shop@example.org"
smtp_host = "127.0.0.1"
smtp_port = {services.smtp_port}
security = "none"
sent_maildir = "{services.sent}"
"""
