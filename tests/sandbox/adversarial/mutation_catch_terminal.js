// attack: catching the terminal error and calling again
// phase: mutate
// expect: mutation_requested:{"to":"first@example.com"}
// host-calls: 0
export default Keep.workflow({
  consumers: { c: Keep.consumer({
    async prepare(ctx, state) {
      return {};
    },
    async mutate(ctx, prepared) {
      ctx.gmail.send({to: 'first@example.com'});
      try { await ctx.sheets.appendRow({values: [1]}); } catch (e) {}
      try { await ctx.gmail.send({to: 'third@example.com'}); } catch (e) {}
      return 1;
    },
    async next(ctx, prepared, mutationResult) {
      return null;
    },
  }) },
});
