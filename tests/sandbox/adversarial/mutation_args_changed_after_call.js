// attack: changing the argument object after the call
// phase: mutate
// expect: mutation_requested:{"to":"first@example.com"}
// host-calls: 0
export default Keep.workflow({
  consumers: { c: Keep.consumer({
    async prepare(ctx, state) {
      return {};
    },
    async mutate(ctx, prepared) {
      const a = {to: 'first@example.com'};
      const p = ctx.gmail.send(a);
      a.to = 'changed@example.com';
      await p;
    },
    async next(ctx, prepared, mutationResult) {
      return null;
    },
  }) },
});
