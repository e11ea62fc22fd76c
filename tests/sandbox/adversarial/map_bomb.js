// attack: ever-growing Map
// phase: producer
// expect: limit_exceeded:memory|cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const m = new Map();
    for (let i = 0; ; i++) m.set('k' + i, {i});
  } } },
});
