// attack: a second ctx call after the mutation
// phase: mutate
// expect: logic_error:after its mutation call
// host-calls: 0
export default Keep.workflow({
  consumers: { c: Keep.consumer({
    async prepare(ctx, state) {
      return {};
    },
    async mutate(ctx, prepared) {
      ctx.gmail.send({to: 'first@example.com'});
      await ctx.gmail.send({to: 'second@example.com'});
    },
    async next(ctx, prepared, mutationResult) {
      return null;
    },
  }) },
});
