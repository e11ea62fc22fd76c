// attack: replacing the global Promise before a ctx call
// phase: producer
// expect: completed:"gmail.search"
// host-calls: 1
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    globalThis.Promise = function () { throw new Error('no'); };
    const r = await ctx.gmail.search({});
    return r.called;
  } } },
});
