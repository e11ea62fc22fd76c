// attack: console output over the run's budget, the limit error caught and logging resumed
// phase: producer
// expect: limit_exceeded:log_bytes
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    for (let i = 0; i < 100; i++) {
      try { console.log('é'.repeat(1000)); } catch (e) { console.log('still here'); }
    }
    return 1;
  } } },
});
