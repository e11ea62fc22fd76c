// attack: Object.prototype.then to hijack host results
// phase: producer
// expect: logic_error:TypeError
// host-calls: 0
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    Object.prototype.then = (r) => r('hijacked');
    return await ctx.gmail.search({});
  } } },
});
