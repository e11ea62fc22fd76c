// attack: Proxy that changes on every read: the host sees one snapshot
// phase: producer
// expect: completed:"snapshot"
// host-calls: 1
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    let n = 0;
    const p = new Proxy({}, {
      ownKeys: () => ['q'],
      getOwnPropertyDescriptor: () => ({ value: 0, enumerable: true, configurable: true }),
      get: (t, k) => (k === 'q' ? 'read' + n++ : undefined),
    });
    const r = await ctx.gmail.search(p);
    return r.with.q === 'read0' && n === 1 ? 'snapshot' : 'changed';
  } } },
});
