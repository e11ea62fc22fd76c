// attack: replacing the global Promise before a ctx call (every global binding is pinned)
// phase: producer
// expect: logic_error:TypeError: 'Promise' is read-only
// host-calls: 0
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    globalThis.Promise = function () { throw new Error('no'); };
    const r = await ctx.gmail.search({});
    return r.called;
  } } },
});
