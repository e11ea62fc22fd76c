// attack: looking for host objects
// phase: producer
// expect: completed:[]
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const bad = ['std', 'os', 'require', 'process', 'fetch', 'setTimeout', 'print', 'eval', 'XMLHttpRequest'];
    return bad.filter((n) => typeof globalThis[n] !== 'undefined');
  } } },
});
