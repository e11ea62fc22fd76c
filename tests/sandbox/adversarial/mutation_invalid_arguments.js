// attack: a mutation whose arguments break the schema
// phase: mutate
// expect: logic_error:invalid arguments
// host-calls: 0
export default Keep.workflow({
  consumers: { c: Keep.consumer({
    async prepare(ctx, state) {
      return {};
    },
    async mutate(ctx, prepared) {
      await ctx.gmail.send({subject: 'no recipient'});
    },
    async next(ctx, prepared, mutationResult) {
      return null;
    },
  }) },
});
