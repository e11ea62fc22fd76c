// attack: cyclic arguments
// phase: producer
// expect: logic_error:not JSON
// host-calls: 0
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const a = {};
    a.a = a;
    return await ctx.gmail.search(a);
  } } },
});
