import Link from "next/link";

export default function NotFound() {
  return (
    <main className="public-page" id="main">
      <p className="brand brand-large">Operon</p>
      <div className="card public-card">
        <h1>Page not found</h1>
        <p>There is no console page at this address.</p>
        <p>
          <Link href="/">Go to the overview</Link>
        </p>
      </div>
    </main>
  );
}
