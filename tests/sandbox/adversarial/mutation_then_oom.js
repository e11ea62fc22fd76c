// attack: running out of memory after the mutation call
// phase: mutate
// expect: limit_exceeded:memory
// host-calls: 0
export default Keep.workflow({
  consumers: { c: Keep.consumer({
    async prepare(ctx, state) {
      return {};
    },
    async mutate(ctx, prepared) {
      ctx.gmail.send({to: 'first@example.com'});
      const a = [];
      for (;;) a.push([1, 2, 3]);
    },
    async next(ctx, prepared, mutationResult) {
      return null;
    },
  }) },
});
