// attack: for(;;) await 0
// phase: producer
// expect: limit_exceeded:jobs|cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    for (;;) await 0;
  } } },
});
