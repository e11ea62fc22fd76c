// attack: toJSON that throws inside the stub
// phase: producer
// expect: logic_error:not JSON
// host-calls: 0
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return await ctx.gmail.search({ toJSON() { throw new Error('no'); } });
  } } },
});
