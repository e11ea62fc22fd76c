// attack: endless microtask chain
// phase: producer
// expect: limit_exceeded:jobs|cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const f = () => Promise.resolve().then(f);
    f();
    await new Promise(() => {});
  } } },
});
