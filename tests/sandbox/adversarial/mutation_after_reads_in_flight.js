// attack: un-awaited reads then a mutation in the same tick
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
    },
    async next(ctx, prepared, mutationResult) {
      return null;
    },
  }) },
});
