"""Workflow scripts the scheduler tests share."""

from __future__ import annotations

JOBS = """
export default Keep.workflow({
  name: "NAME",
  topics: { "job.queued": {} },
  consumers: {
    record: Keep.consumer({
      subscribe: ["job.queued"],
      async prepare(ctx, state) {
        const [job] = await ctx.peek("job.queued", { limit: 1 });
        if (!job) return { reservations: [], data: {} };
        return { reservations: [{ topic: "job.queued", ids: [job.messageId] }],
                 data: { id: job.messageId }, ui: { title: `Record ${job.messageId}` } };
      },
      async mutate(ctx, prepared) {
        await ctx.sheets.appendRow({ spreadsheetId: "jobs", values: ["NAME", prepared.data.id] });
      },
      async next(ctx, prepared, result) { return { last: prepared.data.id }; },
    }),
  },
});
"""
"""One consumer (`record`) that appends each queued job to the ``jobs`` sheet, its row
naming the workflow; replace NAME with the workflow's name."""
