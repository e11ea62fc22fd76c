// attack: millions of pending promises
// phase: producer
// expect: limit_exceeded:memory|cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const all = [];
    for (;;) all.push(new Promise(() => {}));
  } } },
});
