// attack: a synchronous throw after the mutation call
// phase: mutate
// expect: logic_error:after its mutation call
// host-calls: 0
export default Keep.workflow({
  consumers: { c: Keep.consumer({
    async prepare(ctx, state) {
      return {};
    },
    mutate(ctx, prepared) {
      ctx.gmail.send({to: 'first@example.com'});
      throw new Error('after');
    },
    async next(ctx, prepared, mutationResult) {
      return null;
    },
  }) },
});
