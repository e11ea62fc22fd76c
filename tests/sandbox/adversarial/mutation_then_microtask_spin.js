// attack: mutation followed by a spin in a later job
// phase: mutate
// expect: limit_exceeded:cpu_time
// host-calls: 0
export default Keep.workflow({
  consumers: { c: Keep.consumer({
    async prepare(ctx, state) {
      return {};
    },
    async mutate(ctx, prepared) {
      ctx.gmail.send({to: 'first@example.com'});
      Promise.resolve().then(() => { for (;;) {} });
      return 1;
    },
    async next(ctx, prepared, mutationResult) {
      return null;
    },
  }) },
});
