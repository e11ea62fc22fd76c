// attack: two mutations queued in the same tick
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
      ctx.sheets.appendRow({values: [1]});
    },
    async next(ctx, prepared, mutationResult) {
      return null;
    },
  }) },
});
