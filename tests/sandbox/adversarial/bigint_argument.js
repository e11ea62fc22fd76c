// attack: BigInt in the arguments
// phase: producer
// expect: logic_error:not JSON
// host-calls: 0
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return await ctx.gmail.search({ n: 1n });
  } } },
});
