export default Keep.workflow({
  name: 'email-to-sheets',
  topics: { 'email.received': {}, 'row.created': {} },
  consumers: {
    processEmail: Keep.consumer({
      subscribe: ['email.received'],
      publishes: ['row.created'],
      async prepare(ctx, state) {
        const pending = await ctx.peek('email.received');
        if (pending.length === 0) return { reservations: [] };
        const email = pending[0];
        return { reservations: [{ topic: 'email.received', ids: [email.messageId] }],
                 data: { email: email.payload }, ui: { title: `Add row for ${email.payload.from}` } };
      },
      async mutate(ctx, prepared) {
        await ctx.sheets.appendRow({ values: [prepared.data.email.from, prepared.data.email.subject] });
      },
      async next(ctx, prepared, mutationResult) {
        if (mutationResult.status === 'applied') {
          await ctx.publish('row.created', { messageId: `row:${prepared.data.email.from}`,
            title: `Row created for ${prepared.data.email.from}`,
            payload: { rowId: mutationResult.result.rowId } });
        }
        return { processed: 1 };
      },
    }),
  },
});
